import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

@Suite struct NamespaceTests {
    static func withSite(_ env: TestEnvironment = try! TestEnvironment(), _ body: @Sendable @escaping (APIClient, Item) async throws -> Void) async throws {
        try await ContentTests.withSite(env, body)
    }

    @Test func namesAreValidated() async throws {
        try await Self.withSite { api, site in
            let longest = String(repeating: "é", count: 127) + "x"  // 255 bytes
            #expect(longest.utf8.count == 255)
            _ = try await api.createFolder(longest, in: site.id)
            _ = try await api.createFile("ünïcode ✓.txt", in: site.id, text: "ok")
            let badJSONNames = ["", ".", "..", "a/b", "nul\u{0}byte", String(repeating: "x", count: 256)]
            for name in badJSONNames {
                let response = try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: name))
                try response.expect(.badRequest)
                #expect(response.errorCode == "invalid_name", "\(name.debugDescription)")
            }
            // File names travel in the query: raw percent-encoded bytes, invalid UTF-8 included.
            for query in ["name=", "name=.", "name=..", "name=a%2Fb", "name=a%00b", "name=%FF%FE", "name=" + String(repeating: "x", count: 256)] {
                let response = try await api.send(.post, "/v1/items/\(site.id)/children?\(query)", body: [1])
                try response.expect(.badRequest)
                #expect(response.errorCode == "invalid_name", "\(query)")
                #expect(try !response.decode(ErrorResponse.self).error.message.isEmpty)
            }
            try await api.send(.post, "/v1/items/\(site.id)/children?name=bad%G0", body: [1]).expect(.badRequest)
            let renamed = try await api.patch(try await api.createFile("ok.txt", in: site.id, text: "x").id, ItemPatch(name: "x/y"))
            try renamed.expect(.badRequest)
            #expect(renamed.errorCode == "invalid_name")
            #expect(try await api.allChildren(site.id).count == 3)
        }
    }

    @Test func namesAreUniqueBytewiseWithinAFolder() async throws {
        try await Self.withSite { api, site in
            _ = try await api.createFile("Report.txt", in: site.id, text: "a")
            let clash = try await api.send(.post, "/v1/items/\(site.id)/children?name=Report.txt", body: [1])
            try clash.expect(.conflict)
            #expect(clash.errorCode == "name_taken")
            try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: "Report.txt")).expect(.conflict)
            // Different bytes are different names: case, and NFC vs NFD of the same text.
            _ = try await api.createFile("report.txt", in: site.id, text: "b")
            _ = try await api.createFolder("caf\u{E9}", in: site.id)
            _ = try await api.createFolder("cafe\u{301}", in: site.id)
            #expect(try await api.allChildren(site.id).count == 4)
            // The same name in another folder is fine.
            let folder = try await api.createFolder("Plans", in: site.id)
            _ = try await api.createFile("Report.txt", in: folder.id, text: "c")
        }
    }

    /// Renames compare names as bytes too: renaming to the other normalisation of a taken
    /// name is a clash (409), not a database error (500), and renaming a file to the other
    /// normalisation of its own name is a rename.
    @Test func renamesCompareNamesBytewise() async throws {
        try await Self.withSite { api, site in
            let composed = try await api.createFile("caf\u{E9}.txt", in: site.id, text: "composed")
            _ = try await api.createFile("cafe\u{301}.txt", in: site.id, text: "decomposed")
            let clash = try await api.patch(composed.id, ItemPatch(name: "cafe\u{301}.txt"))
            try clash.expect(.conflict)
            #expect(clash.errorCode == "name_taken")
            let other = try await api.createFile("other.txt", in: site.id, text: "o")
            let renamed = try await api.patch(other.id, ItemPatch(name: "ot\u{68}er\u{301}.txt"))
            try renamed.expect(.ok)
            let names = try await api.allChildren(site.id).map { Array($0.name.utf8) }
            #expect(names.contains(Array("other\u{301}.txt".utf8)))
        }
    }

    /// Item ids have one spelling, and the row number behind one is not another: the
    /// decimal row id, other cases, the same bytes with non-zero padding bits, and
    /// padded or altered forms are all 404.
    @Test func itemIdsHaveNoAliases() async throws {
        try await Self.withSite { api, site in
            try await api.send(.get, "/v1/items/\(site.id)").expect(.ok)
            // The last of 22 characters carries 2 bits of the id and 4 padding bits: the next
            // letter of the alphabet decodes to the same bytes with a padding bit set.
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            let lastValue = try #require(alphabet.firstIndex(of: site.id.last!))
            let sameBytesOtherBits = String(site.id.dropLast()) + String(alphabet[lastValue + 1])
            for alias in ["1", "2", "0\(site.id)", site.id.lowercased(), site.id.uppercased(), site.id + "=", site.id + "==",
                          " \(site.id)", sameBytesOtherBits, String(site.id.dropLast()), site.id + "A"] where alias != site.id {
                let encoded = alias.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? alias
                try await api.send(.get, "/v1/items/\(encoded)").expect(.notFound)
            }
        }
    }

    /// Ids show no counter (issue 17, item 9): made one after another, with the
    /// administrator creating items in another site in between, they share no prefix and
    /// sort in no creation order, so nobody can count what happens in sites they cannot see.
    @Test func itemIdsRevealNoCounter() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        let elsewhere = try await env.site("Secret")
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            var ids = [site.id]
            for index in 0..<24 {
                ids.append(try await api.createFile("f\(index).txt", in: site.id, text: "x").id)
                _ = try await env.storage.documents.createFile(
                    named: "s\(index).txt", in: elsewhere.id, bytes: [1], by: .administrator("admin"))
            }
            for id in ids {
                #expect(id.utf8.count == 22 && id.utf8.allSatisfy { $0 < 0x80 && ($0 == 0x2D || $0 == 0x5F || isalnum(Int32($0)) != 0) })
                #expect(!id.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
            }
            #expect(Set(ids.map { $0.prefix(4) }).count == ids.count)
            #expect(ids.sorted() != ids && ids.sorted(by: >) != ids)
            // Listings name the items by the ids their creation returned.
            #expect(try await api.allChildren(site.id).map(\.id) == Array(ids.dropFirst()))
        }
    }

    @Test func renameMoveAndSetModificationTime() async throws {
        try await Self.withSite { api, site in
            let plans = try await api.createFolder("Plans", in: site.id)
            let archive = try await api.createFolder("Archive", in: site.id)
            let file = try await api.createFile("draft.txt", in: plans.id, text: "text")
            let renamed = try await api.patch(file.id, ItemPatch(name: "final.txt")).expect(.ok).decode(Item.self)
            #expect(renamed.name == "final.txt" && renamed.etag == file.etag && renamed.id == file.id)
            let moved = try await api.patch(file.id, ItemPatch(parentID: archive.id)).expect(.ok).decode(Item.self)
            #expect(moved.parentID == archive.id && moved.name == "final.txt")
            #expect(try await api.allChildren(plans.id).isEmpty)
            #expect(try await api.allChildren(archive.id).map(\.id) == [file.id])

            let when = try #require(Timestamp(rfc3339: "2024-03-01T12:34:56.789123Z"))
            let touched = try await api.patch(file.id, ItemPatch(modifiedAt: when)).expect(.ok).decode(Item.self)
            #expect(touched.modifiedAt == when)
            #expect(try await api.item(file.id).modifiedAt == when)
            // Offsets and nanoseconds are accepted; microseconds are kept.
            let raw = #"{"modified_at":"2024-03-01T14:34:56.789123999+02:00"}"#
            let response = try await api.send(.patch, "/v1/items/\(file.id)", headers: [.contentType: "application/json"], body: Array(raw.utf8))
            #expect(try response.expect(.ok).decode(Item.self).modifiedAt == when)
            let bad = try await api.send(.patch, "/v1/items/\(file.id)", body: Array(#"{"modified_at":"yesterday"}"#.utf8))
            try bad.expect(.badRequest)
            #expect(bad.errorCode == "bad_json")
            try await api.send(.patch, "/v1/items/\(file.id)", body: Array("{}".utf8)).expect(.badRequest)

            // A folder's etag follows its own name; its contents move with it.
            let renamedFolder = try await api.patch(archive.id, ItemPatch(name: "Old")).expect(.ok).decode(Item.self)
            #expect(renamedFolder.etag != archive.etag)
            #expect(try await api.item(file.id).parentID == archive.id)
        }
    }

    @Test func movesAreCheckedAndClashesRefused() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        let other = try await env.site("School", grantedTo: ["anna"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let outer = try await api.createFolder("Outer", in: site.id)
            let inner = try await api.createFolder("Inner", in: outer.id)
            let file = try await api.createFile("a.txt", in: site.id, text: "a")
            _ = try await api.createFile("b.txt", in: site.id, text: "b")

            for target in [outer.id, inner.id] {
                let response = try await api.patch(outer.id, ItemPatch(parentID: target))
                try response.expect(.badRequest)
                #expect(response.errorCode == "invalid_move")
            }
            let crossSite = try await api.patch(file.id, ItemPatch(parentID: other.id))
            try crossSite.expect(.badRequest)
            #expect(crossSite.errorCode == "cross_site")
            let clash = try await api.patch(file.id, ItemPatch(name: "b.txt"))
            try clash.expect(.conflict)
            #expect(clash.errorCode == "name_taken")
            try await api.patch(file.id, ItemPatch(parentID: file.id)).expect(.badRequest)
            try await api.patch(site.id, ItemPatch(name: "Renamed")).expect(.forbidden)
            try await api.send(.delete, "/v1/items/\(site.id)").expect(.forbidden)
            let stale = try await api.patch(file.id, ItemPatch(name: "c.txt"), ifMatch: "old-etag")
            try stale.expect(.preconditionFailed)
            #expect(try stale.decode(ErrorResponse.self).item?.name == "a.txt")
            try await api.patch(file.id, ItemPatch(name: "c.txt"), ifMatch: file.etag).expect(.ok)
        }
    }

    @Test func replaceKeepsTheDestinationIdAndItsVersions() async throws {
        try await Self.withSite { api, site in
            let original = try await api.createFile("Plan.odt", in: site.id, text: "version 1")
            let edited = try await api.put(original.id, contents: Array("version 2".utf8), ifMatch: original.etag).expect(.ok).decode(Item.self)
            let temp = try await api.createFile("lu123.tmp", in: site.id, text: "version 3 (saved)")
            let without = try await api.patch(temp.id, ItemPatch(name: "Plan.odt"))
            try without.expect(.conflict)

            let survivor = try await api.patch(temp.id, ItemPatch(name: "Plan.odt", replace: true)).expect(.ok).decode(Item.self)
            #expect(survivor.id == original.id)
            #expect(survivor.name == "Plan.odt" && survivor.etag == temp.etag && survivor.size == temp.size)
            #expect(try await api.content(original.id) == Array("version 3 (saved)".utf8))
            try await api.send(.get, "/v1/items/\(temp.id)").expect(.notFound)
            let versions = try await api.send(.get, "/v1/items/\(original.id)/versions").expect(.ok).decode(VersionList.self).versions
            #expect(versions.map(\.etag) == [temp.etag, edited.etag, original.etag])
            #expect(try await api.allChildren(site.id).map(\.name) == ["Plan.odt"])

            let folder = try await api.createFolder("Folder", in: site.id)
            let file = try await api.createFile("f.txt", in: site.id, text: "f")
            let overFolder = try await api.patch(file.id, ItemPatch(name: "Folder", replace: true))
            try overFolder.expect(.conflict)
            #expect(overFolder.errorCode == "not_replaceable")
            try await api.patch(folder.id, ItemPatch(name: "f.txt", replace: true)).expect(.conflict)
        }
    }

    @Test func deleteIsRecursiveAndConditional() async throws {
        try await Self.withSite { api, site in
            let top = try await api.createFolder("Top", in: site.id)
            let middle = try await api.createFolder("Middle", in: top.id)
            let file = try await api.createFile("deep.txt", in: middle.id, text: "deep")
            let other = try await api.createFile("keep.txt", in: site.id, text: "keep")
            try await api.send(.delete, "/v1/items/\(top.id)", headers: [.ifMatch: "\"nope\""]).expect(.preconditionFailed)
            try await api.send(.delete, "/v1/items/\(top.id)", headers: [.ifMatch: "\"\(top.etag)\""]).expect(.noContent)
            for id in [top.id, middle.id, file.id] {
                try await api.send(.get, "/v1/items/\(id)").expect(.notFound)
            }
            #expect(try await api.allChildren(site.id).map(\.id) == [other.id])
            try await api.send(.delete, "/v1/items/\(top.id)").expect(.notFound)
        }
    }

    @Test func deletedContentLeavesNoBlobs() async throws {
        let env = try TestEnvironment()
        try await Self.withSite(env) { api, site in
            let file = try await api.createFile("a.bin", in: site.id, contents: [1, 2, 3])
            _ = try await api.put(file.id, contents: [4, 5], ifMatch: file.etag).expect(.ok)
            let blobs = env.directory.appendingPathComponent("blobs").path
            #expect(Self.fileCount(under: blobs) == 2)
            try await api.send(.delete, "/v1/items/\(file.id)").expect(.noContent)
            env.storage.blobs.finishRemovals()  // they go after the answer
            #expect(Self.fileCount(under: blobs) == 0)
        }
    }

    static func fileCount(under path: String) -> Int {
        let enumerator = FileManager.default.enumerator(atPath: path)
        var count = 0
        while let next = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path + "/" + next, isDirectory: &isDirectory), !isDirectory.boolValue { count += 1 }
        }
        return count
    }
}
