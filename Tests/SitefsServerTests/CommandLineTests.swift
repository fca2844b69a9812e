import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// The `sitefs-server` executable end to end: admin commands, `serve`, the request log,
/// restarts on the same data directory.
@Suite struct CommandLineTests {
    let scratch: URL
    let data: URL

    init() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-cli-\(UUID().uuidString)")
        data = scratch.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    func admin(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
        try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: stdin)
    }

    func signIn(_ curl: Curl, _ user: String, _ password: String) throws -> Curl {
        let response = try curl.call("POST", "/v1/session", json: #"{"username":"\#(user)","password":"\#(password)"}"#)
        try #require(response.status == 201, "sign-in: \(response.body)")
        let grant = try JSONDecoder().decode(SessionGrant.self, from: Data(response.body.utf8))
        return Curl(baseURL: curl.baseURL, token: grant.token)
    }

    /// Every flag is checked before the server starts: a token lifetime of 10^17 seconds once
    /// started and crashed at the first sign-in.
    @Test func serveRefusesFlagsOutOfRange() throws {
        defer { try? FileManager.default.removeItem(at: scratch) }
        for (flag, value) in [("--token-ttl", "99999999999999999"), ("--token-ttl", "0"), ("--token-ttl", "-5"),
                              ("--max-upload", "0"), ("--port", "70000")] {
            let result = try run(ServerProcess.executable, ["serve", "--data", data.path, flag, value], timeout: 30)
            #expect(result.status != 0, "\(flag) \(value) was accepted")
            #expect(result.err.contains(flag), "\(flag) \(value): \(result.err)")
        }
    }

    @Test func adminCommandsThenServeWithARequestLog() throws {
        defer { try? FileManager.default.removeItem(at: scratch) }
        // A folder tree to import, with a symlink that must be skipped.
        let tree = scratch.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("Plans/Level 1"), withIntermediateDirectories: true)
        try Data("floor plan".utf8).write(to: tree.appendingPathComponent("Plans/Level 1/plan.txt"))
        try Data("readme".utf8).write(to: tree.appendingPathComponent("README.txt"))
        try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("link").path, withDestinationPath: "/etc/passwd")

        #expect(try admin(["user", "add", "anna"], stdin: "s3cret pass\n").status == 0)
        let duplicate = try admin(["user", "add", "anna"], stdin: "other\n")
        #expect(duplicate.status != 0 && duplicate.err.contains("already exists"))
        let empty = try admin(["user", "add", "ben"], stdin: "\n")
        #expect(empty.status != 0 && empty.err.contains("empty"))
        let imported = try admin(["site", "add", "Harbour Tower", "--import", tree.path])
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.out.contains("imported 2 folders, 2 files"))
        #expect(imported.out.contains("skipped"))
        #expect(try admin(["site", "add", "Riverside"]).status == 0)
        #expect(try admin(["site", "add", "Bad/Name"]).status != 0)
        #expect(try admin(["grant", "anna", "Harbour Tower"]).status == 0)
        #expect(try admin(["grant", "anna", "Riverside", "--read-only"]).status == 0)
        let noSuchSite = try admin(["grant", "anna", "Nowhere"])
        #expect(noSuchSite.status != 0 && noSuchSite.err.contains("no site"))

        let server = try ServerProcess(dataDirectory: data)
        defer { server.stop() }
        let anna = try signIn(Curl(baseURL: server.baseURL), "anna", "s3cret pass")
        let sites = try JSONDecoder().decode(ItemPage.self, from: Data(anna.call("GET", "/v1/sites").body.utf8))
        #expect(sites.items.map(\.name) == ["Harbour Tower", "Riverside"])
        #expect(sites.items[1].capabilities == [.read])
        let top = try JSONDecoder().decode(ItemPage.self, from: Data(anna.call("GET", "/v1/items/\(sites.items[0].id)/children?limit=5").body.utf8))
        #expect(Set(top.items.map(\.name)) == ["Plans", "README.txt"])
        let readme = try #require(top.items.first { $0.name == "README.txt" })
        #expect(try anna.call("GET", "/v1/items/\(readme.id)/content").body == "readme")
        #expect(try Curl(baseURL: server.baseURL).call("GET", "/v1/sites").status == 401)

        #expect(server.stop() == 0)
        let log = server.log
        #expect(log.range(of: #"POST /v1/session 201 \d+ \d+ms"#, options: .regularExpression) != nil, "\(log)")
        #expect(log.range(of: #"GET /v1/items/[A-Za-z0-9_-]{22}/children\?limit=5 200 \d+ \d+ms"#, options: .regularExpression) != nil, "\(log)")
        #expect(log.range(of: #"GET /v1/items/[A-Za-z0-9_-]{22}/content 200 6 \d+ms"#, options: .regularExpression) != nil, "\(log)")
        #expect(log.contains("GET /v1/sites 401"))
        #expect(!log.contains(anna.token!) && !log.contains("s3cret"))
    }

    @Test func demoSeedsOnceAndEverythingSurvivesARestart() throws {
        defer { try? FileManager.default.removeItem(at: scratch) }
        var server = try ServerProcess(dataDirectory: data, extraArguments: ["--demo"])
        var demo = try signIn(Curl(baseURL: server.baseURL), "demo", "demo")
        let sites = try JSONDecoder().decode(ItemPage.self, from: Data(demo.call("GET", "/v1/sites").body.utf8))
        #expect(sites.items.count == 2)
        // Upload a change, then restart (with --demo again: nothing is re-seeded or lost).
        let firstSite = sites.items[0]
        let created = try demo.call("POST", "/v1/items/\(firstSite.id)/children?name=notes.txt", extra: ["--data-binary", "site notes"])
        #expect(created.status == 201, "\(created.body)")
        #expect(server.stop() == 0)

        server = try ServerProcess(dataDirectory: data, extraArguments: ["--demo"])
        defer { server.stop() }
        demo = try signIn(Curl(baseURL: server.baseURL), "demo", "demo")
        let again = try JSONDecoder().decode(ItemPage.self, from: Data(demo.call("GET", "/v1/sites").body.utf8))
        #expect(again.items == sites.items)
        let children = try JSONDecoder().decode(ItemPage.self, from: Data(demo.call("GET", "/v1/items/\(firstSite.id)/children").body.utf8))
        let notes = try #require(children.items.first { $0.name == "notes.txt" })
        #expect(try demo.call("GET", "/v1/items/\(notes.id)/content").body == "site notes")
        let folders = children.items.filter { $0.kind == .folder }
        #expect(folders.count >= 2)
    }
}
