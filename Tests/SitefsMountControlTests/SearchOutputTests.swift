import Foundation
import SitefsMountControl
import Testing

/// Reading a search's pages (bounded, in order, an error after the pages before it) and
/// how hits are printed: one line each with where they matched, the snippet cut to the
/// terminal, server text escaped; JSON with absolute paths.
@Suite struct SearchOutputTests {
    static func hit(_ path: String, matched: [String] = ["name"], snippet: String? = nil) -> SearchResultHit {
        SearchResultHit(entry: (path as NSString).lastPathComponent, path: path, matched: matched, snippet: snippet,
                        modifiedAt: "2026-11-27T10:14:03Z", size: 12, kind: "file")
    }

    @Test func pagesAreReadInOrderFollowingTheirTokens() throws {
        let pages = [
            "user.sitefs.control.results": SearchResultsPage(coverage: "server", hits: [Self.hit("A/a.odt")], next: "t1"),
            "user.sitefs.control.results:t1": SearchResultsPage(coverage: "server", hits: [Self.hit("A/b.odt")], next: "t2"),
            "user.sitefs.control.results:t2": SearchResultsPage(coverage: "server", hits: [Self.hit("A/c.odt")]),
        ]
        var asked: [String] = [], received: [String] = []
        try SearchResultsReader.readAll(read: { name in
            asked.append(name)
            return try #require(pages[name])
        }, receive: { page in received += page.hits.map(\.path) })
        #expect(asked == ["user.sitefs.control.results", "user.sitefs.control.results:t1", "user.sitefs.control.results:t2"])
        #expect(received == ["A/a.odt", "A/b.odt", "A/c.odt"])
    }

    @Test func aDaemonErrorEndsTheReadingAfterThePagesBeforeIt() {
        var received = 0
        #expect(throws: SearchReadError.daemon("the server cannot be reached")) {
            try SearchResultsReader.readAll(read: { name in
                name.hasSuffix(":t1") ? SearchResultsPage(coverage: "server", hits: [], error: "the server cannot be reached")
                    : SearchResultsPage(coverage: "server", hits: [Self.hit("a")], next: "t1")
            }, receive: { received += $0.hits.count })
        }
        #expect(received == 1)
    }

    /// Tokens that repeat, cannot be attribute names, or never end: the reading stops.
    @Test func theReadingIsBounded() {
        #expect(throws: SearchReadError.repeatedToken) {
            try SearchResultsReader.readAll(read: { _ in SearchResultsPage(coverage: "server", hits: [], next: "same") }, receive: { _ in })
        }
        #expect(throws: SearchReadError.badToken) {
            try SearchResultsReader.readAll(read: { _ in SearchResultsPage(coverage: "server", hits: [], next: String(repeating: "t", count: 300)) },
                                            receive: { _ in })
        }
        var count = 0
        #expect(throws: SearchReadError.tooManyPages) {
            try SearchResultsReader.readAll(read: { _ in
                count += 1
                return SearchResultsPage(coverage: "server", hits: [], next: "t\(count)")
            }, receive: { _ in })
        }
        #expect(count == SearchResultsReader.maximumPages)
    }

    @Test func eachHitIsALineWithWhereItMatched() {
        let output = SearchOutput(mount: "/home/anna/sites", width: nil)
        #expect(output.line(Self.hit("Harbour Tower/Plans/plan.odt")) == "/home/anna/sites/Harbour Tower/Plans/plan.odt  name")
        #expect(output.line(Self.hit("a.txt", matched: ["content"], snippet: "…the level 1\n  plan…"))
                == "/home/anna/sites/a.txt  text: …the level 1 plan…")
        #expect(output.line(Self.hit("a.txt", matched: ["name", "content"], snippet: "plan of the site"))
                == "/home/anna/sites/a.txt  name, text: …plan of the site…")
        #expect(output.line(Self.hit("a.txt", matched: ["content"])) == "/home/anna/sites/a.txt  text")
        #expect(output.line(Self.hit("a.txt", matched: [])) == "/home/anna/sites/a.txt")
        #expect(SearchOutput(mount: "/", width: nil).fullPath(Self.hit("Site/a")) == "/Site/a")
    }

    @Test func snippetsAreCutToTheTerminalAndPathsNever() {
        let output = SearchOutput(mount: "/m", width: 40)
        let long = Self.hit("S/a.txt", matched: ["content"], snippet: "the quick brown fox jumps over the lazy dog again and again")
        let line = output.line(long)
        #expect(line == "/m/S/a.txt  text: …the quick brown fox…")
        #expect(line.count <= 40)
        // No room for a useful snippet: "text" alone; the path stays whole.
        let deep = Self.hit("S/" + String(repeating: "d", count: 40) + "/a.txt", matched: ["content"], snippet: "words")
        #expect(output.line(deep) == "/m/" + deep.path + "  text")
    }

    @Test func serverTextIsEscapedForTheTerminal() {
        let output = SearchOutput(mount: "/m", width: nil)
        let hostile = Self.hit("S/evil\u{1B}[2J.txt", matched: ["content"], snippet: "ring\u{07} the \u{9B}31m bell")
        let line = output.line(hostile)
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        #expect(line == "/m/S/evil\\u{1b}[2J.txt  text: …ring\\u{7} the \\u{9b}31m bell…")
    }

    @Test func theJSONDocumentHasAbsolutePathsAndIsTerminalSafe() throws {
        let output = SearchOutput(mount: "/m", width: nil)
        let text = output.json(searchFolder: "/m/.search/plan", coverage: "listed_names", note: "names only",
                               hits: [Self.hit("S/a\u{9B}.txt", matched: ["name"])], error: nil)
        #expect(!text.unicodeScalars.contains { (0x7F...0x9F).contains($0.value) })
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(document["search_folder"] as? String == "/m/.search/plan")
        #expect(document["coverage"] as? String == "listed_names" && document["complete"] as? Bool == true)
        let hits = try #require(document["hits"] as? [[String: Any]])
        #expect(hits.first?["path"] as? String == "/m/S/a\u{9B}.txt", "escaped in the text, the same string once parsed")
        #expect(hits.first?["modified_at"] as? String == "2026-11-27T10:14:03Z" && hits.first?["snippet"] is NSNull)
        let failed = output.json(searchFolder: "/m/.search/plan", coverage: nil, note: nil, hits: [], error: "offline")
        #expect(failed.contains(#""complete" : false"#) && failed.contains(#""error" : "offline""#))
    }

    @Test func hitsThatCannotBePathsUnderTheMountAreTold() {
        #expect(Self.hit("S/a.txt").problem == nil)
        for path in ["", "/etc/passwd", "S/../../etc", "S//a", "./a", "S/a\u{0}b"] {
            #expect(Self.hit(path).problem != nil, "\(path.debugDescription)")
        }
        var negative = Self.hit("S/a")
        negative.size = -1
        #expect(negative.problem != nil)
    }

    @Test func theDaemonsAnswerDecodes() throws {
        let json = #"""
            {"coverage":"server","note":null,"hits":[{"entry":"plan.odt","path":"Harbour Tower/plan.odt","matched":["name","content"],
             "snippet":"the plan","modified_at":"2026-11-27T10:14:03Z","size":12288,"kind":"file","extra":1}],"next":null,"error":null}
            """#
        let page = try JSONDecoder().decode(SearchResultsPage.self, from: Data(json.utf8))
        #expect(page.hits == [SearchResultHit(entry: "plan.odt", path: "Harbour Tower/plan.odt", matched: ["name", "content"],
                                              snippet: "the plan", modifiedAt: "2026-11-27T10:14:03Z", size: 12288, kind: "file")])
        #expect(page.next == nil && page.error == nil && page.coverage == "server")
    }

    /// A folder found is in the results, without an entry in the search folder.
    @Test func aFolderHitHasNoEntry() throws {
        let json = #"""
            {"coverage":"server","note":null,"hits":[{"entry":null,"path":"Harbour Tower/Plans","matched":["name"],
             "snippet":null,"modified_at":"2026-11-27T10:14:03Z","size":0,"kind":"folder"}],"next":null,"error":null}
            """#
        let page = try JSONDecoder().decode(SearchResultsPage.self, from: Data(json.utf8))
        #expect(page.hits.map(\.entry) == [nil])
        #expect(page.hits.map(\.path) == ["Harbour Tower/Plans"])
    }
}
