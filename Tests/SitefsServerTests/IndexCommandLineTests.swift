import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Search through the real `sitefs-server`: the worker `serve` runs indexes what an import
/// and an upload stored, and `index status` and `index rebuild` run beside it on the same
/// data folder.
@Suite struct IndexCommandLineTests {
    @Test func serveIndexesTextAndTheIndexCommandsReportAndRebuild() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-index-cli-\(UUID().uuidString.prefix(8))")
        let data = scratch.appendingPathComponent("data")
        let folder = scratch.appendingPathComponent("import")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Notes"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        try Data("the lighthouse keeper".utf8).write(to: folder.appendingPathComponent("Notes/keeper.txt"))
        try Data("tide tables".utf8).write(to: folder.appendingPathComponent("tides.md"))
        func admin(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
            let outcome = try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: stdin)
            return (outcome.status, outcome.out, outcome.err)
        }
        #expect(try admin(["user", "add", "anna"], stdin: "secret\n").status == 0)
        #expect(try admin(["site", "add", "Harbour", "--import", folder.path]).status == 0)
        #expect(try admin(["grant", "anna", "Harbour"]).status == 0)
        #expect(try admin(["index", "status"]).out == "pending 2\nindexed 0\nfailed 0\n")

        let server = try ServerProcess(dataDirectory: data)
        defer { server.stop() }
        var anna = Curl(baseURL: server.baseURL)
        let session = try anna.call("POST", "/v1/session", json: #"{"username":"anna","password":"secret"}"#)
        anna.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        func search(_ q: String) throws -> [SearchResult] {
            try JSONDecoder().decode(SearchResultPage.self, from: Data(try anna.call("GET", "/v1/search?q=\(q)").body.utf8)).results
        }
        // The worker of `serve` reads the texts without being asked.
        #expect(try eventually { try search("lighthouse").count == 1 })
        let hit = try #require(try search("lighthouse").first)
        #expect(hit.item.name == "keeper.txt" && hit.path.map(\.name) == ["Harbour", "Notes"] && hit.snippet == "the lighthouse keeper")
        #expect(try eventually { try admin(["index", "status"]).out == "pending 0\nindexed 2\nfailed 0\n" })

        let rebuilt = try admin(["index", "rebuild"])
        #expect(rebuilt.status == 0 && rebuilt.out == "queued 2 files for indexing\n", "\(rebuilt.err)")
        #expect(try admin(["index", "rebuild", "--site", "Harbour"]).out == "queued 2 files for indexing\n")
        let unknown = try admin(["index", "rebuild", "--site", "Nowhere"])
        #expect(unknown.status != 0 && unknown.err.contains("Nowhere"), "\(unknown.err)")
        // An admin command's queue on SQLite is found by the worker's next look (every 5 s).
        #expect(try eventually(timeout: .seconds(30)) { try admin(["index", "status"]).out == "pending 0\nindexed 2\nfailed 0\n" })
        #expect(try search("tide").map(\.item.name) == ["tides.md"])
    }
}
