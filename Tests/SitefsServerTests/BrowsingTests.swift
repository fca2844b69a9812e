import Foundation
import HTTPTypes
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

@Suite struct BrowsingTests {
    @Test func sitesListsOnlyGrantedSitesWithTheirCapabilities() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        try await env.site("Harbour", grantedTo: ["anna"])
        try await env.site("School", grantedTo: ["anna"], readOnly: true)
        try await env.site("Secret", grantedTo: ["ben"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let page = try await api.send(.get, "/v1/sites").expect(.ok).decode(ItemPage.self)
            #expect(page.items.map(\.name) == ["Harbour", "School"])
            #expect(page.nextCursor == nil)
            #expect(page.items.allSatisfy { $0.kind == .site && $0.parentID == nil && $0.siteID == $0.id })
            #expect(page.items[0].capabilities == [.read, .addChildren])
            #expect(page.items[1].capabilities == [.read])
            // next_cursor is an explicit null on the last page.
            #expect(try await api.send(.get, "/v1/sites").text.contains("\"next_cursor\":null"))
        }
    }

    @Test func sitesArePaged() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        for index in 0..<5 { try await env.site("Site \(index)", grantedTo: ["anna"]) }
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let first = try await api.send(.get, "/v1/sites?limit=2").expect(.ok).decode(ItemPage.self)
            let cursor = try #require(first.nextCursor)
            let second = try await api.send(.get, "/v1/sites?limit=2&cursor=\(cursor)").expect(.ok).decode(ItemPage.self)
            let third = try await api.send(.get, "/v1/sites?limit=2&cursor=\(second.nextCursor!)").expect(.ok).decode(ItemPage.self)
            #expect((first.items + second.items + third.items).map(\.name) == (0..<5).map { "Site \($0)" })
            #expect(third.nextCursor == nil)
        }
    }

    @Test func anotherUsersSiteCannotBeReachedById() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        let secret = try await env.site("Secret", grantedTo: ["ben"])
        try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            let ben = try await APIClient.signedIn(client, user: "ben")
            let folder = try await ben.createFolder("Plans", in: secret.id)
            let file = try await ben.createFile("plan.txt", in: folder.id, text: "confidential")
            let anna = try await APIClient.signedIn(client, user: "anna")
            for id in [secret.id, folder.id, file.id] {
                let probes: [(HTTPRequest.Method, String)] = [
                    (.get, "/v1/items/\(id)"), (.get, "/v1/items/\(id)/children"), (.get, "/v1/items/\(id)/content"),
                    (.get, "/v1/items/\(id)/versions"), (.delete, "/v1/items/\(id)"),
                ]
                for (method, path) in probes {
                    let response = try await anna.send(method, path)
                    try response.expect(.notFound)
                    #expect(!response.text.contains("Secret") && !response.text.contains("plan.txt"))
                }
                try await anna.send(.put, "/v1/items/\(id)/content", body: [1]).expect(.notFound)
                try await anna.patch(id, ItemPatch(name: "mine")).expect(.notFound)
                try await anna.send(.post, "/v1/items/\(id)/children?name=x", body: [1]).expect(.notFound)
            }
            // Unknown and malformed ids look the same.
            try await anna.send(.get, "/v1/items/999999").expect(.notFound)
            try await anna.send(.get, "/v1/items/abc").expect(.notFound)
            #expect(try await ben.content(file.id) == Array("confidential".utf8))
        }
    }

    @Test func childrenPageWithoutDuplicatesOrGaps() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        for index in 0..<250 {
            _ = try await env.storage.documents.createFolder(named: String(format: "folder %03d", index), in: site.id, by: .administrator("admin"))
        }
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            var names: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await api.children(site.id, limit: 100, cursor: cursor)
                #expect(page.items.count <= 100)
                names += page.items.map(\.name)
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil
            #expect(pages == 3)
            #expect(names == (0..<250).map { String(format: "folder %03d", $0) })
            #expect(try await api.children(site.id).items.count == 200)  // default page size
        }
    }

    @Test func aPageNamesTheNextInALinkHeaderAndTheLastNone() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        for index in 0..<5 {
            _ = try await env.storage.documents.createFolder(named: "folder \(index)", in: site.id, by: .administrator("admin"))
        }
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            // Followed link by link, the pages are the ones the cursors give.
            var uri: String? = "/v1/items/\(site.id)/children?limit=2"
            var names: [String] = []
            var links = 0
            while let next = uri {
                let response = try await api.send(.get, next).expect(.ok)
                let page = try response.decode(ItemPage.self)
                names += page.items.map(\.name)
                let link = response.headers[HTTPField.Name("Link")!]
                if let cursor = page.nextCursor {
                    #expect(link == "</v1/items/\(site.id)/children?limit=2&cursor=\(cursor)>; rel=\"next\"")
                    links += 1
                } else {
                    #expect(link == nil, "the last page names a next one")
                }
                uri = link.map { String($0.dropFirst().prefix { $0 != ">" }) }
            }
            #expect(names == (0..<5).map { "folder \($0)" })
            #expect(links == 2)
            // The sites' pages too.
            _ = try await env.site("Depot", grantedTo: ["anna"])
            let sites = try await api.send(.get, "/v1/sites?limit=1").expect(.ok)
            let cursor = try #require(try sites.decode(ItemPage.self).nextCursor)
            #expect(sites.headers[HTTPField.Name("Link")!] == "</v1/sites?limit=1&cursor=\(cursor)>; rel=\"next\"")
        }
    }

    @Test func pagingParametersAreValidated() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            for bad in ["limit=0", "limit=1001", "limit=ten", "limit=-5", "cursor=nonsense", "cursor=%ZZ"] {
                let response = try await api.send(.get, "/v1/items/\(site.id)/children?\(bad)")
                try response.expect(.badRequest)
                #expect(response.errorCode != nil)
            }
            try await api.send(.get, "/v1/items/\(site.id)/children?limit=1000").expect(.ok)
            // A cursor of one listing is refused by another.
            _ = try await api.createFolder("a", in: site.id)
            _ = try await api.createFolder("b", in: site.id)
            let siteCursor = try #require(try await api.children(site.id, limit: 1).nextCursor)
            let response = try await api.send(.get, "/v1/sites?cursor=\(siteCursor)")
            try response.expect(.badRequest)
            #expect(response.errorCode == "bad_cursor")
        }
    }

    @Test func itemsCarryTheirMetadata() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let before = Timestamp.now()
            let file = try await api.createFile("Inspection form.odt", in: site.id, text: "hello")
            let fetched = try await api.item(file.id)
            #expect(fetched == file)
            #expect(fetched.parentID == site.id && fetched.siteID == site.id)
            #expect(fetched.kind == .file && fetched.size == 5)
            #expect(fetched.contentType == "application/vnd.oasis.opendocument.text")
            #expect(fetched.createdBy == "anna" && fetched.modifiedBy == "anna")
            #expect(fetched.createdAt >= before && fetched.modifiedAt >= before)
            #expect(fetched.capabilities == [.read, .write, .rename, .delete])
            let raw = try await api.send(.get, "/v1/items/\(file.id)").text
            // RFC 3339 with fractional seconds on the wire.
            #expect(raw.range(of: #""modified_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z""#, options: .regularExpression) != nil)
            try await api.send(.get, "/v1/items/\(file.id)/children").expect(.badRequest)
        }
    }

    @Test func readOnlyGrantRefusesEveryWrite() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("School", grantedTo: ["anna"], readOnly: true)
        let folder = try await env.storage.documents.createFolder(named: "Plans", in: site.id, by: .administrator("admin"))
        let file = try await env.storage.documents.createFile(named: "plan.txt", in: folder.id, bytes: Array("v1".utf8), by: .administrator("admin"))
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            #expect(try await api.item(file.id).capabilities == [.read])
            #expect(try await api.content(file.id) == Array("v1".utf8))
            let writes: [TestResponse] = [
                try await api.send(.post, "/v1/items/\(folder.id)/children", json: NewFolder(name: "new")),
                try await api.send(.post, "/v1/items/\(folder.id)/children?name=new.txt", body: [1, 2]),
                try await api.put(file.id, contents: [1], ifMatch: file.etag),
                try await api.patch(file.id, ItemPatch(name: "renamed.txt")),
                try await api.send(.delete, "/v1/items/\(file.id)"),
                try await api.send(.delete, "/v1/items/\(folder.id)"),
            ]
            for response in writes {
                try response.expect(.forbidden)
                #expect(response.errorCode == "read_only")
            }
            #expect(try await api.allChildren(folder.id).map(\.name) == ["plan.txt"])
        }
    }

    @Test func unknownEndpointsGetAJSONError() async throws {
        let env = try TestEnvironment()
        try await env.withRouter { client in
            let response = try await APIClient(client).send(.get, "/v2/whatever")
            try response.expect(.notFound)
            #expect(response.errorCode == "not_found")
        }
    }
}
