import Foundation
import HummingbirdTesting
import NIOCore
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

/// `GET /v1/search`: names and text, filters, ranking and paging, access, and the index kept
/// as items change. On SQLite, and with `SITEFS_TEST_STORE=postgres` on PostgreSQL (the
/// same suite: one behaviour on both stores); `sameDataGivesTheSameResultsOnBothStores`
/// puts the two side by side.
@Suite struct SearchTests {
    /// A site Harbour granted to anna, signed in, with the environment (for the indexer).
    static func withSite(_ body: @Sendable @escaping (APIClient, Item, TestEnvironment) async throws -> Void) async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            try await body(try await APIClient.signedIn(client, user: "anna"), site, env)
        }
    }

    static func indexed(_ env: TestEnvironment, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(try await env.storage.searchIndexer.waitUntilIndexed(), "the index did not become idle", sourceLocation: sourceLocation)
    }

    /// Every result of a search, following cursors (a page size of `limit`).
    static func search(_ api: APIClient, _ parameters: [String: String?], limit: Int? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) async throws -> [SearchResult] {
        var results: [SearchResult] = []
        var cursor: String?
        for _ in 0..<1000 {
            var all = parameters
            all["limit"] = limit.map(String.init)
            all["cursor"] = cursor
            let page = try await api.send(.get, "/v1/search" + APIClient.query(all)).expect(.ok, sourceLocation: sourceLocation)
                .decode(SearchResultPage.self)
            results += page.results
            cursor = page.nextCursor
            if cursor == nil { return results }
        }
        Issue.record("a search did not end in 1000 pages", sourceLocation: sourceLocation)
        return results
    }

    static func names(_ api: APIClient, _ q: String, _ more: [String: String?] = [:]) async throws -> [String] {
        var parameters = more
        parameters["q"] = q
        return try await search(api, parameters).map(\.item.name)
    }

    @Test func namesMatchWhateverTheirCaseAccentsAndUnicodeForm() async throws {
        try await Self.withSite { api, site, _ in
            _ = try await api.createFile("Résumé 2024.odt", in: site.id, text: "")            // NFC
            _ = try await api.createFile("RE\u{301}SUME\u{301} old.odt", in: site.id, text: "")  // NFD, upper case
            _ = try await api.createFile("Straße.txt", in: site.id, text: "")
            _ = try await api.createFile("unrelated.txt", in: site.id, text: "")
            for q in ["résumé", "re\u{301}sume\u{301}", "RESUME", "sum", "Résumé"] {
                #expect(Set(try await Self.names(api, q)) == ["Résumé 2024.odt", "RE\u{301}SUME\u{301} old.odt"], "\(q)")
            }
            #expect(try await Self.names(api, "strasse") == ["Straße.txt"])
            #expect(try await Self.names(api, "2024 résumé") == ["Résumé 2024.odt"])
            #expect(try await Self.names(api, "nothing-like-it").isEmpty)
        }
    }

    @Test func textWordsMatchAsPrefixesAndEveryWordMustMatch() async throws {
        try await Self.withSite { api, site, env in
            let harbour = try await api.createFile("a.txt", in: site.id, text: "The lighthouse crane was inspected on Monday.\nAll fine.")
            _ = try await api.createFile("b.txt", in: site.id, text: "A crane for the warehouse. Café au lait.")
            _ = try await api.createFile("c.md", in: site.id, text: "Nothing to see here")
            // Names at once, text once indexed.
            #expect(try await Self.names(api, "crane").isEmpty)
            try await Self.indexed(env)
            #expect(Set(try await Self.names(api, "crane")) == ["a.txt", "b.txt"])
            #expect(try await Self.names(api, "ligh") == ["a.txt"])             // a prefix
            #expect(try await Self.names(api, "ighthouse").isEmpty)                 // not a word's inside
            #expect(try await Self.names(api, "crane lighthouse") == ["a.txt"])    // both words
            #expect(try await Self.names(api, "CRANE Monday") == ["a.txt"])
            #expect(try await Self.names(api, "cafe") == ["b.txt"])              // accents folded in text too
            #expect(try await Self.names(api, "crane elephant").isEmpty)
            // A word may match the name while another matches the text.
            #expect(try await Self.names(api, "a.txt monday") == ["a.txt"])
            let hit = try #require(try await Self.search(api, ["q": "inspected"]).first)
            #expect(hit.item.id == harbour.id)
            #expect(hit.matched == ["content"])
            #expect(hit.path.map(\.name) == ["Harbour"])
            #expect(hit.snippet == "The lighthouse crane was inspected on Monday. All fine.")
            let byName = try #require(try await Self.search(api, ["q": "c.md"]).first)
            #expect(byName.matched == ["name"] && byName.snippet == nil)
        }
    }

    @Test func aSnippetIsTheWordsAroundTheFirstMatch() async throws {
        try await Self.withSite { api, site, env in
            let words = (1...60).map { "w\($0)" }
            var text = words
            text[30] = "Kräne"
            _ = try await api.createFile("long.txt", in: site.id, text: text.joined(separator: " \n "))
            try await Self.indexed(env)
            let hit = try #require(try await Self.search(api, ["q": "krane"]).first)
            #expect(hit.snippet == "… " + text[22...41].joined(separator: " ") + " …")
        }
    }

    @Test func filtersNarrowBySiteFolderTypeAndTime() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let harbour = try await env.site("Harbour", grantedTo: ["anna"])
        let tower = try await env.site("Tower", grantedTo: ["anna"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let plans = try await api.createFolder("Plans", in: harbour.id)
            let level = try await api.createFolder("Level 1", in: plans.id)
            _ = try await api.createFile("plan top.TXT", in: harbour.id, text: "")
            _ = try await api.createFile("plan deep.pdf", in: level.id, text: "")
            _ = try await api.createFile("plan tower.txt", in: tower.id, text: "")
            let old = try await api.send(.post, "/v1/items/\(plans.id)/children?name=plan%20old.txt&modified_at=2001-01-01T00:00:00Z",
                                         body: []).expect(.created).decode(Item.self)
            #expect(Set(try await Self.names(api, "plan")) == ["Plans", "plan top.TXT", "plan deep.pdf", "plan tower.txt", "plan old.txt"])
            #expect(Set(try await Self.names(api, "plan", ["site": tower.id])) == ["plan tower.txt"])
            #expect(Set(try await Self.names(api, "plan", ["folder": plans.id])) == ["plan deep.pdf", "plan old.txt"])
            #expect(Set(try await Self.names(api, "plan", ["folder": level.id])) == ["plan deep.pdf"])
            #expect(Set(try await Self.names(api, "plan", ["type": "txt"])) == ["plan top.TXT", "plan tower.txt", "plan old.txt"])
            #expect(Set(try await Self.names(api, "plan", ["type": ".PDF"])) == ["plan deep.pdf"])
            #expect(Set(try await Self.names(api, "plan", ["since": "2020-01-01T00:00:00Z"]))
                    == ["Plans", "plan top.TXT", "plan deep.pdf", "plan tower.txt"])
            #expect(try await Self.names(api, "plan", ["since": "2001-01-01T00:00:00Z", "folder": plans.id, "type": "txt"])
                    == [old.name])
            // A folder's path: the site first, down to the parent.
            let deep = try #require(try await Self.search(api, ["q": "deep"]).first)
            #expect(deep.path.map(\.name) == ["Harbour", "Plans", "Level 1"])
            #expect(deep.path.map(\.id) == [harbour.id, plans.id, level.id])
            // Folders are found too, and a site by its name (with an empty path).
            #expect(try await Self.search(api, ["q": "level"]).map(\.item.id) == [level.id])
            let site = try #require(try await Self.search(api, ["q": "tower", "type": nil]).first { $0.item.kind == .site })
            #expect(site.path.isEmpty)
        }
    }

    /// Class 0 (the name is the query), then 1 (every word in the name), then 2 (a word only
    /// in the text); newest first within a class; any page size walks the same list once.
    @Test func rankingAndPaging() async throws {
        try await Self.withSite { api, site, env in
            func file(_ name: String, _ text: String, _ time: String) async throws {
                try await api.send(.post, "/v1/items/\(site.id)/children" + APIClient.query(["name": name, "modified_at": time]),
                                   body: Array(text.utf8)).expect(.created)
            }
            try await file("budget notes.txt", "", "2024-01-05T00:00:00Z")
            try await file("Budget.txt", "", "2020-01-01T00:00:00Z")
            try await file("old budget.txt", "", "2019-01-01T00:00:00Z")
            try await file("minutes.txt", "the budget was agreed", "2024-02-01T00:00:00Z")
            try await file("report.txt", "budget overrun", "2023-01-01T00:00:00Z")
            try await file("budget", "", "2018-01-01T00:00:00Z")
            for index in 0..<6 { try await file("same time budget \(index).txt", "", "2022-06-01T00:00:00Z") }
            try await Self.indexed(env)
            let expected = ["Budget.txt", "budget", "budget notes.txt"] + (0..<6).map { "same time budget \($0).txt" }
                + ["old budget.txt", "minutes.txt", "report.txt"]
            let all = try await Self.search(api, ["q": "budget"])
            #expect(all.map(\.item.name) == expected)
            for limit in [1, 2, 5] {
                let paged = try await Self.search(api, ["q": "budget"], limit: limit)
                #expect(paged.map(\.item.name) == expected, "limit \(limit)")
            }
            // A cursor belongs to its search.
            let first = try await api.send(.get, "/v1/search?q=budget&limit=2").expect(.ok).decode(SearchResultPage.self)
            let cursor = try #require(first.nextCursor)
            let other = try await api.send(.get, "/v1/search?q=report&limit=2&cursor=\(cursor)")
            try other.expect(.badRequest)
            #expect(other.errorCode == "bad_cursor")
        }
    }

    @Test func aSiteNotGrantedIsInvisible() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        let harbour = try await env.site("Harbour", grantedTo: ["anna"])
        _ = try await env.site("Tower", grantedTo: ["anna", "ben"])
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let ben = try await APIClient.signedIn(client, user: "ben")
            _ = try await anna.createFile("secret plan.txt", in: harbour.id, text: "confidential merger words")
            try await Self.indexed(env)
            #expect(try await Self.names(anna, "confidential") == ["secret plan.txt"])
            #expect(try await Self.names(ben, "confidential").isEmpty)
            #expect(try await Self.names(ben, "secret").isEmpty)
            #expect(try await Self.names(ben, "harbour").isEmpty)
            #expect(try await Self.names(ben, "tower") == ["Tower"])
            // Naming the site is no way in: 404, as on the item routes.
            let response = try await ben.send(.get, "/v1/search?q=secret&site=\(harbour.id)")
            try response.expect(.notFound)
            try await ben.send(.get, "/v1/search?q=secret&folder=\(harbour.id)").expect(.notFound)
        }
    }

    @Test func deletedItemsVanish() async throws {
        try await Self.withSite { api, site, env in
            let folder = try await api.createFolder("Archive", in: site.id)
            let inside = try await api.createFile("old minutes.txt", in: folder.id, text: "zeppelin")
            let file = try await api.createFile("draft.txt", in: site.id, text: "zeppelin")
            try await Self.indexed(env)
            #expect(Set(try await Self.names(api, "zeppelin")) == [inside.name, file.name])
            try await api.send(.delete, "/v1/items/\(file.id)").expect(.noContent)
            try await api.send(.delete, "/v1/items/\(folder.id)").expect(.noContent)
            #expect(try await Self.names(api, "zeppelin").isEmpty)
            #expect(try await Self.names(api, "minutes").isEmpty)
            #expect(try await Self.names(api, "archive").isEmpty)
            let left = try await env.storage.metadata.read { db in
                (try db.int(sql: "SELECT count(*) FROM search_text") ?? -1, try db.int(sql: "SELECT count(*) FROM search_jobs") ?? -1)
            }
            #expect(left.0 == 0 && left.1 == 0)
        }
    }

    @Test func aRenamedItemIsFoundByItsNewNameAndKeepsItsText() async throws {
        try await Self.withSite { api, site, env in
            let file = try await api.createFile("draft.txt", in: site.id, text: "quarterly figures")
            try await Self.indexed(env)
            try await api.patch(file.id, ItemPatch(name: "Final Résumé.txt")).expect(.ok)
            #expect(try await Self.names(api, "draft").isEmpty)
            #expect(try await Self.names(api, "resume") == ["Final Résumé.txt"])
            // No job was queued by the rename: the text is there without the worker.
            #expect(try await env.storage.documents.searchIndexStatus().pending == 0)
            #expect(try await Self.names(api, "quarterly") == ["Final Résumé.txt"])
        }
    }

    @Test func aNewVersionsTextReplacesTheOldOnes() async throws {
        try await Self.withSite { api, site, env in
            let file = try await api.createFile("notes.txt", in: site.id, text: "apples")
            try await Self.indexed(env)
            #expect(try await Self.names(api, "apples") == ["notes.txt"])
            try await api.put(file.id, contents: Array("oranges".utf8), ifMatch: nil).expect(.ok)
            try await Self.indexed(env)
            #expect(try await Self.names(api, "apples").isEmpty)
            #expect(try await Self.names(api, "oranges") == ["notes.txt"])
            // Saved by rename-over: the survivor has the moved file's text.
            let temp = try await api.createFile("notes.txt.tmp", in: site.id, text: "bananas")
            try await api.patch(temp.id, ItemPatch(name: "notes.txt", replace: true)).expect(.ok)
            try await Self.indexed(env)
            #expect(try await Self.names(api, "bananas") == ["notes.txt"])
            #expect(try await Self.names(api, "oranges").isEmpty)
            #expect(try await Self.search(api, ["q": "bananas"]).map(\.item.id) == [file.id])
        }
    }

    /// A job whose version is no longer current when the worker gets to it is dropped; the
    /// newer one is indexed.
    @Test func aStaleJobIsSkipped() async throws {
        try await Self.withSite { api, site, env in
            let file = try await api.createFile("notes.txt", in: site.id, text: "first")
            let engine = env.storage.metadata.database.engine
            let claimed = try await env.storage.metadata.write { db in try SearchJobs.claim(db, engine: engine, at: Timestamp.now().microseconds) }
            #expect(claimed.map(\.etag) == [file.etag])
            try await api.put(file.id, contents: Array("second".utf8), ifMatch: nil).expect(.ok)
            let stored = try await env.storage.metadata.write { db in
                try SearchJobs.complete(db, job: claimed[0], with: SearchIndexer.indexed(ExtractedText(text: "first", outcome: .complete)),
                                        at: 0)
            }
            #expect(!stored)
            try await Self.indexed(env)
            #expect(try await Self.names(api, "first").isEmpty)
            #expect(try await Self.names(api, "second") == ["notes.txt"])
            #expect(try await env.storage.documents.searchIndexStatus() == SearchIndexStatus(pending: 0, indexed: 1, failed: 0))
        }
    }

    @Test func badParametersAre400s() async throws {
        try await Self.withSite { api, site, _ in
            let file = try await api.createFile("a.txt", in: site.id, text: "")
            let cases: [(String, String)] = [
                ("", "empty_query"), ("q=", "empty_query"), ("q=%20%20", "empty_query"), ("q=%CC%81", "empty_query"),
                ("q=" + Array(repeating: "a", count: 9).joined(separator: "+"), "too_many_words"),
                ("q=" + String(repeating: "x", count: 65), "word_too_long"),
                ("q=" + String(repeating: "+", count: 1100) + "x", "query_too_long"),
                ("q=a&since=yesterday", "bad_since"), ("q=a&cursor=nonsense", "bad_cursor"),
                ("q=a&type=t%2Ax", "bad_type"), ("q=a&type=", "bad_type"), ("q=a&type=" + String(repeating: "x", count: 17), "bad_type"),
                ("q=a&limit=0", "bad_request"), ("q=a&limit=1001", "bad_request"), ("q=a&limit=x", "bad_request"),
                ("q=a&site=\(file.id)", "not_a_site"), ("q=a&folder=\(file.id)", "not_a_folder"),
            ]
            for (query, code) in cases {
                let response = try await api.send(.get, "/v1/search?\(query)")
                try response.expect(.badRequest)
                #expect(response.errorCode == code, "\(query)")
            }
            for query in ["q=a&site=AAAAAAAAAAAAAAAAAAAAAA", "q=a&folder=AAAAAAAAAAAAAAAAAAAAAA", "q=a&site=x"] {
                try await api.send(.get, "/v1/search?\(query)").expect(.notFound)
            }
            // Query syntax of either engine is only text to look for.
            for q in ["\"", "a*", "NEAR(a", "a:*", "!a", "a&b", "a|b", "(", "'", "%", "_", "\\"] {
                try await api.send(.get, "/v1/search" + APIClient.query(["q": q])).expect(.ok)
            }
            try await api.send(.get, "/v1/search?q=x", headers: [.authorization: "Bearer nope"]).expect(.unauthorized)
        }
    }

    /// The same items, made the same way on SQLite and PostgreSQL, give the same results in
    /// the same order, page by page.
    @Test(.enabled(if: PostgresCluster.isAvailable)) func sameDataGivesTheSameResultsOnBothStores() async throws {
        let database = try PostgresCluster.shared().createDatabase()
        defer { try? database.drop() }
        var outcomes: [[String]] = []
        for postgres in [false, true] {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-search-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: folder) }
            let storage = try ServerStorage(configuration: ServerConfiguration(
                dataDirectory: folder, database: postgres ? database.location : nil, databaseConnections: 2))
            defer { storage.close() }
            let admin = Caller.administrator("admin")
            let documents = storage.documents
            let site = try await documents.createSite(named: "Harbour", by: admin)
            let plans = try await documents.createFolder(named: "Plans", in: site.id, by: admin)
            let texts = ["crane inspection report", "Kräne und Häfen", "budget crane", "ÉTÉ été ete", "naïve café", "plain words",
                         "mixed 2024 numbers 42abc", "日本語 テキスト", "crane crane crane", "report of the harbour master"]
            for (index, text) in texts.enumerated() {
                let name = ["Crane \(index).txt", "Résumé \(index).md", "re\u{301}sume\u{301} \(index).txt", "budget \(index).csv"][index % 4]
                _ = try await documents.createFile(
                    named: name, in: index % 2 == 0 ? site.id : plans.id, body: Self.body(text), by: admin,
                    modifiedAt: Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000 + Int64(index % 3) * 1_000_000))
            }
            #expect(try await storage.searchIndexer.waitUntilIndexed())
            var lines: [String] = []
            for q in ["crane", "resume", "ete", "kra", "report crane", "budget", "2024", "日本", "txt", "e", "plans", "cafe naive"] {
                for limit in [3, 200] {
                    var cursor: String?
                    var pages = 0
                    repeat {
                        let query = try SearchQuery(q: q, cursor: cursor, limit: limit)
                        let page = try await documents.search(query, for: admin)
                        lines += page.results.map { "\(q) \(limit): \($0.item.name) \($0.matched) \($0.snippet ?? "-") \($0.path.map(\.name))" }
                        cursor = page.nextCursor
                        pages += 1
                    } while cursor != nil && pages < 100
                }
            }
            outcomes.append(lines)
        }
        #expect(outcomes[0].count > 40)
        #expect(outcomes[0] == outcomes[1])
    }

    static func body(_ text: String) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            continuation.yield(ByteBuffer(string: text))
            continuation.finish()
        }
    }
}
