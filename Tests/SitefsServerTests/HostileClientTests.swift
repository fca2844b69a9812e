import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

#if canImport(Glibc)
import Glibc
#endif

/// What a broken or hostile client sends is refused with a clear 4xx, never a 500 or a
/// crash, and never read as something else (issue 17).
@Suite struct HostileClientTests {
    /// A live server with anna and her site Harbour: `body` gets the port, anna's token, the
    /// head of an upload into the site (up to its Content-Length or chunking), and a way to
    /// list the site as it is on the server. The data directory goes afterwards, whatever
    /// happened.
    private func withLiveSite(connectionTimeout: Duration = .seconds(60),
                              _ body: @Sendable @escaping (_ port: Int, _ token: String, _ uploadHead: String,
                                                           _ siteNames: @Sendable () async throws -> [String]) async throws -> Void)
        async throws {
        let env = try TestEnvironment(connectionTimeout: connectionTimeout)
        defer { env.remove() }
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.application.test(.live) { client in
            let port = try #require(client.port)
            let token = try await APIClient.signedIn(client, user: "anna").token!
            let head = "POST /v1/items/\(site.id)/children?name=a.txt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n"
            try await body(port, token, head) {
                try await env.storage.documents.children(of: site.id, cursor: nil, limit: 100, for: .administrator("admin")).items.map(\.name)
            }
        }
    }

    @Test func malformedUploadBodiesAre400NotA500() async throws {
        try await withLiveSite { port, _, head, siteNames in
            // A body shorter than its Content-Length, the client done sending.
            let short = try await RawHTTP.exchange(port: port, head + "Content-Length: 100\r\n\r\nshort", finishSending: true)
            #expect(short.hasPrefix("HTTP/1.1 400"), "\(short.prefix(200))")
            #expect(short.contains("malformed_request"))
            // A chunk size that is not hexadecimal.
            let chunked = try await RawHTTP.exchange(port: port, head + "Transfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n")
            #expect(chunked.hasPrefix("HTTP/1.1 400"), "\(chunked.prefix(200))")
            #expect(try await siteNames().isEmpty, "a malformed upload left a file")
        }
    }

    /// Idle connections, request heads still arriving and stalled bodies are closed after the
    /// connection timeout (1 s here); the server goes on answering.
    @Test func slowAndIdleConnectionsAreClosed() async throws {
        try await withLiveSite(connectionTimeout: .seconds(1)) { port, token, upload, _ in
            for (what, partial) in [("idle", ""), ("half a head", "GET /v1/sites HTTP/1.1\r\nHost: x\r\n"),
                                    ("half a body", upload + "Content-Length: 100\r\n\r\nhalf")] {
                let closedAfter = try await RawHTTP.secondsUntilClosed(port: port, sending: partial, giveUpAfter: 10)
                #expect(closedAfter.map { $0 < 8 } == true, "\(what): still open after \(closedAfter ?? 10) s")
            }
            // (On a new connection: the test client's kept-alive one was idle long enough to go too.)
            let answer = try await RawHTTP.exchange(port: port, "GET /v1/sites HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(100))")
        }
    }

    /// SQLite's text binding stopped at a NUL: `anna\0garbage` signed in as anna.
    @Test func aUserNameWithANULSignsNobodyIn() async throws {
        let env = try TestEnvironment()
        try await env.user("anna", password: "secret")
        try await env.withRouter { client in
            let api = APIClient(client)
            for name in ["anna\u{0}garbage", "anna\u{0}", "\u{0}anna"] {
                let response = try await api.send(.post, "/v1/session", json: SessionRequest(username: name, password: "secret"))
                try response.expect(.unauthorized)
            }
            try await api.send(.post, "/v1/session", json: SessionRequest(username: "anna", password: "secret")).expect(.created)
        }
    }
}

/// One HTTP/1.1 exchange over a plain socket, bytes exactly as given: for requests no HTTP
/// client library would send. Returns what the server answered before closing or 5 s.
///
/// The socket calls block, so they run on a thread of their own: on the test's cooperative
/// thread they would starve the in-process server's request handlers, which share that pool.
enum RawHTTP {
    static func exchange(port: Int, _ request: String, finishSending: Bool = false) async throws -> String {
        try await offThePool { try blockingExchange(port: port, request, finishSending: finishSending) }
    }

    /// Connects, sends `bytes`, and waits for the server to close: the seconds that took, or
    /// nil if it had not after `giveUpAfter`.
    static func secondsUntilClosed(port: Int, sending bytes: String, giveUpAfter limit: Double) async throws -> Double? {
        try await offThePool { try blockingSecondsUntilClosed(port: port, sending: bytes, giveUpAfter: limit) }
    }

    private static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    private static func blockingSecondsUntilClosed(port: Int, sending bytes: String, giveUpAfter limit: Double) throws -> Double? {
        let descriptor = try connected(port)
        defer { close(descriptor) }
        let started = Date()
        let data = Array(bytes.utf8)
        if !data.isEmpty { _ = send(descriptor, data, data.count, Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date().timeIntervalSince(started) < limit {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return Date().timeIntervalSince(started) }
        }
        return nil
    }

    private static func connected(_ port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(descriptor)
            throw POSIXError(.ECONNREFUSED)
        }
        return descriptor
    }

    private static func blockingExchange(port: Int, _ request: String, finishSending: Bool) throws -> String {
        let descriptor = try connected(port)
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(request.utf8)
        guard send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw POSIXError(.EPIPE) }
        if finishSending { shutdown(descriptor, Int32(SHUT_WR)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            answer += buffer[0..<count]
            // One response is enough: stop at the end of its body (the server may keep the connection).
            if let text = String(bytes: answer, encoding: .utf8), let end = text.range(of: "\r\n\r\n"),
               let length = text[..<end.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") })
                .flatMap({ Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) }),
               text.utf8.distance(from: end.upperBound.samePosition(in: text.utf8)!, to: text.utf8.endIndex) >= length {
                break
            }
        }
        return String(decoding: answer, as: UTF8.self)
    }
}

/// Cursors reveal nothing of the server's shared sequences and work only for whom they were
/// handed out to (issue 17: a user polling the change feed could count everybody's changes).
@Suite struct CursorTests {
    @Test func aChangeCursorRevealsNothingAndServesOnlyItsUser() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        _ = try await env.site("Harbour", grantedTo: ["anna", "ben"])
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let ben = try await APIClient.signedIn(client, user: "ben")
            let first = try await anna.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            let second = try await anna.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            #expect(first != second, "the same position gave the same cursor twice: it can be compared")
            let opened = String(decoding: Base64URLProbe.decode(first), as: UTF8.self)
            #expect(!opened.contains("f1:"), "the cursor shows its position: \(opened)")
            // Anna's cursor is anna's.
            try await anna.send(.get, "/v1/changes?cursor=\(first)").expect(.ok)
            let stolen = try await ben.send(.get, "/v1/changes?cursor=\(first)")
            try stolen.expect(.badRequest)
            #expect(stolen.errorCode == "bad_cursor")
            // Altered: one character changed.
            var altered = Array(first)
            altered[altered.count / 2] = altered[altered.count / 2] == "A" ? "B" : "A"
            try await anna.send(.get, "/v1/changes?cursor=\(String(altered))").expect(.badRequest)
        }
    }

    @Test func cursorsSurviveARestartOfTheServer() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        let cursor = try await env.application.test(.router) { client in
            try await APIClient.signedIn(client, user: "anna").send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
        }
        _ = try await env.storage.documents.createFile(named: "new.txt", in: site.id, bytes: [1], by: .administrator("admin"))
        let restarted = try TestEnvironment(directory: env.directory)
        try await restarted.application.test(.router) { client in
            let page = try await APIClient.signedIn(client, user: "anna").send(.get, "/v1/changes?cursor=\(cursor)").expect(.ok)
                .decode(ChangePage.self)
            #expect(page.changes.count == 1)
        }
    }
}

/// base64url without padding, for looking inside a cursor.
enum Base64URLProbe {
    static func decode(_ text: String) -> [UInt8] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Array(Data(base64Encoded: base64) ?? Data())
    }
}
