import Foundation
import HTTPTypes
import Hummingbird
import SitefsAPI
import SitefsHTTPBackend
import SitefsProvider
import Synchronization
import Testing

/// `GET /v1/search`, `GET .../versions` and `POST .../restore` as a hostile server answers
/// them: what the backend asks, what it makes of good answers, and that every bad result
/// is left out with its reason (the rest of the page standing), never shown.
@Suite struct SearchValidationTests {
    /// An item's JSON in site S, parent `parent` (nil: a site).
    static func item(id: String, name: String = "plan.odt", kind: String = "file", parent: String? = "F", site: String = "S") -> String {
        let parentJSON = parent.map { "\"\($0)\"" } ?? "null"
        return #"{"id":"\#(id)","parent_id":\#(parentJSON),"site_id":"\#(site)","name":\#(Self.quoted(name)),"kind":"\#(kind)","size":7,"content_type":null,"created_at":"2026-11-01T10:00:00Z","modified_at":"2026-11-02T10:00:00Z","created_by":"anna","modified_by":"anna","etag":"e","capabilities":["read","write"]}"#
    }

    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }

    static func result(_ item: String, path: [(String, String)], matched: [String] = ["name"], snippet: String? = nil) -> String {
        let elements = path.map { #"{"id":"\#($0.0)","name":\#(Self.quoted($0.1))}"# }.joined(separator: ",")
        let matchedJSON = matched.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"item":\#(item),"path":[\#(elements)],"matched":[\#(matchedJSON)],"snippet":\#(snippet.map(Self.quoted) ?? "null")}"#
    }

    static let sitePath = [("S", "Harbour Tower"), ("F", "Plans")]

    @Test func goodResultsBecomeHitsAndBadOnesAreRefusedEachWithItsReason() async throws {
        let results = [
            Self.result(Self.item(id: "A"), path: Self.sitePath, matched: ["name", "content", "comments"],
                        snippet: "the level\r\n1 plan\u{1B}[31m, revised"),
            Self.result(Self.item(id: "S", name: "Harbour Tower", kind: "site", parent: nil), path: []),
            Self.result(Self.item(id: "F", name: "Plans", kind: "folder", parent: "S"), path: [("S", "Harbour Tower")]),
            // Refused: a path not starting at the site, not ending at the parent, with an
            // unusable name, with an id reserved for local files, a cycle, a site with a path,
            // an item whose own name cannot be a file name, too many match kinds.
            Self.result(Self.item(id: "B"), path: [("F", "Plans")]),
            Self.result(Self.item(id: "C"), path: [("S", "Harbour Tower")]),
            Self.result(Self.item(id: "D"), path: [("S", "Harbour Tower"), ("X", "a/b"), ("F", "Plans")]),
            Self.result(Self.item(id: "E"), path: [("S", "Harbour Tower"), ("local:1", "Mine"), ("F", "Plans")]),
            Self.result(Self.item(id: "G"), path: [("S", "Harbour Tower"), ("F", "Plans"), ("F", "Plans")]),
            Self.result(Self.item(id: "S", name: "Harbour Tower", kind: "site", parent: nil), path: [("S", "Harbour Tower")]),
            Self.result(Self.item(id: "H", name: ".."), path: Self.sitePath),
            Self.result(Self.item(id: "I"), path: Self.sitePath, matched: Array(repeating: "name", count: 17)),
        ]
        let body = #"{"results":[\#(results.joined(separator: ","))],"next_cursor":"c2"}"#
        try await withCraftedServer(body: body) { backend in
            #expect(backend.searchSupport == .server)
            let page = try backend.search(SearchQuery(words: "plan"), after: nil, limit: 50)
            #expect(page.hits.map(\.item.identifier.id) == ["A", "S", "F"])
            #expect(page.next == PageToken("c2"))
            #expect(page.refused.count == 8, "\(page.refused)")
            for (reason, count) in [("does not start at its site", 1), ("does not end at its parent", 1), ("unusable name", 2),
                                    ("unusable id", 2), ("is a site, but has a path", 1), ("matched in 17 ways", 1)] {
                #expect(page.refused.filter { $0.contains(reason) }.count == count, "\(reason): \(page.refused)")
            }
            let hit = page.hits[0]
            #expect(hit.matched == [.name, .content], "a kind a newer server adds is ignored")
            #expect(hit.ancestors.map(\.identifier) == [ItemIdentifier(site: "S", id: "S"), ItemIdentifier(site: "S", id: "F")])
            #expect(hit.ancestors.map(\.name) == ["Harbour Tower", "Plans"])
            #expect(hit.snippet == "the level 1 plan[31m, revised", "one line, no controls")
            #expect(page.hits[1].ancestors.isEmpty && page.hits[1].snippet == nil)
        }
    }

    @Test func theQueryTravelsAsParametersAndResultsOutsideTheSiteAreRefused() async throws {
        let seen = Mutex<[String: String]>([:])
        let body = #"{"results":[\#(Self.result(Self.item(id: "A", site: "T"), path: [("T", "Other"), ("F", "Plans")]))],"next_cursor":null}"#
        try await withHostileServer({ request in
            var parameters: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { parameters[String(key)] = String(value) }
            seen.withLock { $0 = parameters }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
        }) { backend in
            let since = try #require(Timestamp(rfc3339: "2026-11-01T00:00:00Z"))
            let query = SearchQuery(words: "level 1 plan", site: ItemIdentifier(site: "S", id: "S"), folder: ItemIdentifier(site: "S", id: "F"),
                                    fileExtension: "pdf", modifiedSince: since)
            let page = try backend.search(query, after: PageToken("c1"), limit: 5000)
            #expect(page.hits.isEmpty)
            #expect(page.refused.count == 1 && page.refused[0].contains("not the one searched"), "\(page.refused)")
            let parameters = seen.withLock { $0 }
            #expect(parameters["q"] == "level 1 plan" && parameters["site"] == "S" && parameters["folder"] == "F")
            #expect(parameters["type"] == "pdf" && parameters["cursor"] == "c1" && parameters["limit"] == "1000")
            #expect(parameters["since"].flatMap(Timestamp.init(rfc3339:)) == since)
        }
    }

    @Test func aServerWithoutSearchIsToldFromAnUnknownSite() async throws {
        try await withCraftedServer(status: .notFound, body: #"{"error":{"code":"not_found","message":"no such endpoint"}}"#) { backend in
            #expect { try backend.search(SearchQuery(words: "x"), after: nil, limit: 10) } throws: { error in
                guard case .refused(501, "search_unsupported", _) = error as? ProviderError else { return false }
                return true
            }
        }
        try await withCraftedServer(status: .notFound, body: #"{"error":{"code":"not_found","message":"no such item"}}"#) { backend in
            #expect { try backend.search(SearchQuery(words: "x", site: ItemIdentifier(site: "S", id: "S")), after: nil, limit: 10) } throws: { error in
                guard case .notFound = error as? ProviderError else { return false }
                return true
            }
        }
    }

    @Test(arguments: [#""""#, "\"\(String(repeating: "c", count: 5000))\"", "7"])
    func anUnusableCursorOrAMalformedPageFailsTheSearch(cursor: String) async throws {
        try await withCraftedServer(body: #"{"results":[],"next_cursor":\#(cursor)}"#) { backend in
            #expect(throws: ProviderError.self) { try backend.search(SearchQuery(words: "x"), after: nil, limit: 10) }
            do {
                _ = try backend.search(SearchQuery(words: "x"), after: nil, limit: 10)
            } catch ProviderError.invalidResponse {
            } catch {
                Issue.record("expected invalidResponse, got \(error)")
            }
        }
    }

    // MARK: Versions and restore

    static func version(_ etag: String, size: String = "7", at time: String = "2026-11-02T10:00:00Z", by author: String = "anna") -> String {
        #"{"etag":\#(Self.quoted(etag)),"size":\#(size),"modified_at":"\#(time)","modified_by":\#(Self.quoted(author))}"#
    }

    @Test func versionsAreReadNewestFirstWithAuthorsThatCanBeShown() async throws {
        let body = #"{"versions":[\#(Self.version("e3", by: "anna\u{1B}[2J")),\#(Self.version("e2", size: "0", by: "")),\#(Self.version("e1", by: "ben"))]}"#
        try await withCraftedServer(body: body) { backend in
            let versions = try backend.versions(of: ItemIdentifier(site: "S", id: "A"))
            #expect(versions.map(\.identifier) == ["e3", "e2", "e1"])
            #expect(versions.map(\.modifiedBy) == [nil, nil, "ben"], "an author that cannot be shown is left out")
            #expect(versions[1].size == 0 && versions[0].modified == Timestamp(rfc3339: "2026-11-02T10:00:00Z"))
        }
    }

    @Test(arguments: [version("e1", size: "-1"), version("e1", size: "2305843009213693952"), version("with\"quote"),
                      version(""), version(String(repeating: "e", count: 257)), version("e1", at: "1969-12-31T23:59:59Z")])
    func anImpossibleVersionFailsTheList(bad: String) async throws {
        try await withCraftedServer(body: #"{"versions":[\#(Self.version("e2")),\#(bad)]}"#) { backend in
            do {
                _ = try backend.versions(of: ItemIdentifier(site: "S", id: "A"))
                Issue.record("accepted \(bad)")
            } catch ProviderError.invalidResponse {
            } catch {
                Issue.record("expected invalidResponse, got \(error)")
            }
        }
    }

    @Test func aRestoreNamesTheVersionAndSendsTheCondition() async throws {
        let seen = Mutex<(path: String, ifMatch: String?)>(("", nil))
        try await withHostileServer({ request in
            seen.withLock { $0 = (request.uri.path, request.headers[.ifMatch]) }
            let answer = request.uri.path.contains("/v1/items/A/") ? Self.item(id: "A") : Self.item(id: "Z")
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: answer)))
        }) { backend in
            let file = ItemIdentifier(site: "S", id: "A")
            let restored = try backend.restore(file, version: "e1", baseVersion: "e3")
            #expect(restored.identifier == file)
            #expect(seen.withLock { $0.path } == "/v1/items/A/versions/e1/restore")
            #expect(seen.withLock { $0.ifMatch } == "\"e3\"")
            // The answer must be the file asked about; a version id that could not travel is
            // no version at all, and nothing is sent.
            #expect(throws: ProviderError.self) { try backend.restore(ItemIdentifier(site: "S", id: "B"), version: "e1", baseVersion: nil) }
            seen.withLock { $0 = ("", nil) }
            #expect { try backend.restore(file, version: "e\"1", baseVersion: nil) } throws: { error in
                guard case .refused(404, "no_such_version", _) = error as? ProviderError else { return false }
                return true
            }
            #expect(seen.withLock { $0.path } == "")
        }
    }
}
