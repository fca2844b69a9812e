import SitefsAPI
import SitefsProvider
import SitefsStore
import Testing

/// Items of one page share the storage of their common strings, and say what they said.
@Suite struct SharedItemStringsTests {
    /// Where a string's bytes are: the same address for two strings means one storage.
    private func storage(_ string: String) -> UnsafeRawPointer? {
        var string = string
        return string.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }

    /// A fresh copy of the bytes of `text`, as a decoder makes for every item.
    private func decoded(_ text: String) -> String { String(decoding: Array(text.utf8), as: UTF8.self) }

    private func item(_ id: String, site: String, parent: String, author: String) -> ProviderItem {
        var item = Tree.item(id, "n\(id)", in: ItemIdentifier(site: decoded(site), id: decoded(parent)), site: decoded(site))
        item.createdBy = decoded(author)
        item.modifiedBy = decoded(author)
        return item
    }

    @Test func aPagesItemsShareTheirSiteFolderAndAuthor() {
        let site = "site-0f4c8a2e-5b1d-4c3e", folder = "folder-7d9e1f20-aa31-4b", author = "user-2c5d8e7f-1a2b-4c"
        let items = (1...50).map { item("\($0)", site: site, parent: folder, author: author) }
        #expect(Set(items.map { storage($0.parent!.id) }).count == 50, "decoded apart, as a page is")
        let shared = SharedItemStrings.sharing(items)
        #expect(shared == items, "the items say the same")
        for strings in [shared.map(\.identifier.site), shared.map(\.parent!.site), shared.map(\.parent!.id), shared.map(\.createdBy)] {
            #expect(Set(strings.map(storage)).count == 1)
        }
        #expect(storage(shared[0].identifier.site) == storage(shared[0].parent!.site))
    }

    @Test func onlyTheSameBytesAreShared() {
        // NFC and NFD spell one name alike; as bytes they are two, and each keeps its own.
        let composed = "Baustelle Caf\u{E9} Nord-Ost", decomposed = "Baustelle Cafe\u{301} Nord-Ost"
        let items = [item("1", site: "s", parent: composed, author: "a"), item("2", site: "s", parent: decomposed, author: "a")]
        let shared = SharedItemStrings.sharing(items)
        #expect(Array(shared[0].parent!.id.utf8) == Array(composed.utf8))
        #expect(Array(shared[1].parent!.id.utf8) == Array(decomposed.utf8))
    }
}
