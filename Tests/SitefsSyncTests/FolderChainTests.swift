import SitefsProvider
import Testing
@testable import SitefsSync

/// A folder chain as the journal stores it, read back.
@Suite struct FolderChainTests {
    private func chain(_ names: [String], site: String = "S") throws -> FolderChain {
        let links = names.enumerated().map { index, name in
            FolderChain.Link(identifier: index == 0 ? ItemIdentifier(site: site, id: site) : ItemIdentifier(site: site, id: "id \"\(name)\"\\"),
                             name: name)
        }
        return try #require(FolderChain(links))
    }

    @Test func chainsEncodedInTurnReadBackAsThemselves() throws {
        // The last chain encoded is kept: asking for two in turn must give each its own.
        let plans = try chain(["Harbour", "Plans"]), forms = try chain(["Harbour", "Forms", "2026"])
        for expected in [plans, forms, plans, plans, forms] {
            #expect(FolderChain(encoded: expected.encoded, site: "S") == expected)
        }
    }

    @Test func namesEqualOnlyAsUnicodeAreEncodedAsTheirOwnBytes() throws {
        let composed = try chain(["Harbour", "caf\u{e9}"]), decomposed = try chain(["Harbour", "cafe\u{301}"])
        _ = composed.encoded  // the one kept, equal to the next as Strings compare
        let read = try #require(FolderChain(encoded: decomposed.encoded, site: "S"))
        #expect(read.links.last?.name.utf8.elementsEqual("cafe\u{301}".utf8) == true)
    }
}
