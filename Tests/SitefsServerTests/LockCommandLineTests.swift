import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// The lock administration of the `sitefs-server` executable: display names, `lock list`
/// and `lock break`, run beside a serving server on the same data folder.
@Suite struct LockCommandLineTests {
    @Test func displayNamesListedLocksAndBreakingOne() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-lock-cli-\(UUID().uuidString.prefix(8))")
        let data = scratch.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        func admin(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
            try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: stdin)
        }
        #expect(try admin(["user", "add", "anna", "--display-name", "Anna Berger"], stdin: "secret\n").status == 0)
        let blank = try admin(["user", "add", "ben", "--display-name", "  "], stdin: "secret\n")
        #expect(blank.status != 0 && blank.err.contains("display names"), "\(blank.err)")
        #expect(try admin(["site", "add", "Harbour Tower"]).status == 0)
        #expect(try admin(["grant", "anna", "Harbour Tower"]).status == 0)
        #expect(try admin(["user", "set", "nobody", "--display-name", "X"]).status != 0)
        #expect(try admin(["user", "set", "anna"]).status != 0, "neither --display-name nor --clear-display-name")

        let server = try ServerProcess(dataDirectory: data)
        defer { server.stop() }
        var anna = Curl(baseURL: server.baseURL)
        let session = try anna.call("POST", "/v1/session", json: #"{"username":"anna","password":"secret"}"#)
        anna.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        let site = try JSONDecoder().decode(ItemPage.self, from: Data(try anna.call("GET", "/v1/sites").body.utf8)).items[0]
        let folder = try JSONDecoder().decode(Item.self, from: Data(try anna.call(
            "POST", "/v1/items/\(site.id)/children", json: #"{"name":"Level 1","kind":"folder"}"#).body.utf8))
        let file = try JSONDecoder().decode(Item.self, from: Data(try anna.call(
            "POST", "/v1/items/\(folder.id)/children?name=plan.odt", extra: ["--data-binary", "v1"]).body.utf8))
        let taken = try anna.call("PUT", "/v1/items/\(file.id)/lock", json: #"{"device":"site-laptop-3","application":"LibreOffice"}"#)
        #expect(taken.status == 201, "\(taken.body)")
        let grant = try JSONDecoder().decode(LockGrant.self, from: Data(taken.body.utf8))
        #expect(grant.lock.holderName == "Anna Berger")

        // A new display name shows on new locks; the live one keeps its own.
        #expect(try admin(["user", "set", "anna", "--display-name", "Anna B."]).status == 0)
        let listed = try admin(["lock", "list"])
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out == [
            "Harbour Tower", "Level 1/plan.odt", "Anna Berger (anna)", "site-laptop-3", "LibreOffice",
            grant.lock.createdAt.rfc3339, grant.lock.expiresAt.rfc3339,
        ].joined(separator: "\t") + "\n")

        let unknown = try admin(["lock", "break", "Harbour Tower", "Level 1/none.odt"])
        #expect(unknown.status != 0 && unknown.err.contains("there is no"), "\(unknown.err)")
        let broken = try admin(["lock", "break", "Harbour Tower", "Level 1/plan.odt"])
        #expect(broken.status == 0 && broken.out.contains("broke the lock of Anna Berger"), "\(broken.out) \(broken.err)")
        #expect(try admin(["lock", "list"]).out.isEmpty)
        let item = try JSONDecoder().decode(Item.self, from: Data(try anna.call("GET", "/v1/items/\(file.id)").body.utf8))
        #expect(item.lock == nil)
        #expect(try admin(["lock", "break", "Harbour Tower", "Level 1/plan.odt"]).out.contains("was not locked"))

        let again = try anna.call("PUT", "/v1/items/\(file.id)/lock", json: #"{"device":"","application":""}"#)
        #expect(try JSONDecoder().decode(LockGrant.self, from: Data(again.body.utf8)).lock.holderName == "Anna B.")
        #expect(try admin(["user", "set", "anna", "--clear-display-name"]).status == 0)
    }
}
