import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// A held change-feed answer, as it crosses a real connection: 200 and heartbeats (spaces)
/// while nothing changes, so a client can tell a quiet server from a dead connection, then a
/// body that still parses as the page.
@Suite(.serialized) struct HeldChangeAnswerTests {
    @Test func aHeldAnswerSendsHeartbeatsThenThePage() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-held-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("data")
        for arguments in [["user", "add", "anna"], ["site", "add", "Harbour"], ["grant", "anna", "Harbour"]] {
            let result = try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: "secret\n")
            try #require(result.status == 0, "\(arguments): \(result.err)")
        }
        let server = try ServerProcess(dataDirectory: data)
        defer { server.stop() }
        var client = Curl(baseURL: server.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"secret"}"#)
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        let cursor = try JSONDecoder().decode(ChangePage.self, from: Data(client.call("GET", "/v1/changes").body.utf8)).nextCursor

        // Cut off after 3 s of a 10 s wait: the answer has begun (200) and carries heartbeats.
        // (curl itself, since the kit's Curl treats a cut transfer as a failure.)
        let body = folder.appendingPathComponent("partial")
        let header = folder.appendingPathComponent("auth")
        _ = FileManager.default.createFile(atPath: header.path, contents: Data("Authorization: Bearer \(client.token!)\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
        let cut = try run(URL(fileURLWithPath: "/usr/bin/curl"),
                          ["-sS", "--max-time", "3", "-H", "@\(header.path)", "-o", body.path, "-w", "%{http_code}",
                           server.baseURL + "/v1/changes?cursor=\(cursor)&wait=10"], timeout: 30)
        #expect(cut.status == 28, "curl should have been cut off by --max-time: \(cut.err)")
        #expect(cut.out == "200")
        let partial = try Data(contentsOf: body)
        #expect(partial.count >= 16 && partial.allSatisfy { $0 == UInt8(ascii: " ") }, "got \(partial.count) bytes: \(String(decoding: partial, as: UTF8.self).debugDescription)")

        // Held to the end: heartbeats, then the (empty) page, one JSON value.
        let whole = try client.call("GET", "/v1/changes?cursor=\(cursor)&wait=3")
        #expect(whole.status == 200)
        #expect(whole.body.hasPrefix(String(repeating: " ", count: 16)))
        let page = try JSONDecoder().decode(ChangePage.self, from: Data(whole.body.utf8))
        #expect(page.changes.isEmpty && !page.hasMore)
    }
}
