import Foundation
import SitefsTestSupport

/// The test server's routes. Each returns whether the connection may serve another request.
///
/// - `/echo...`: replies with the request body; method, target and request headers come back
///   as `X-Echo-Method`, `X-Echo-Target` and `X-Req-<lower-case name>` response headers.
///   `/echo-then-drop` then closes the connection without announcing it;
///   `/echo-first-only` closes unanswered when it is not the connection's first request.
/// - `/checksum`: streams the body through FNV-1a 64 and replies `length=N fnv=HEX`, with
///   `X-Saw-Expect: yes|no`.
/// - `/bytes/N`: N pattern bytes (see TestPattern).
/// - `/headers`: a fixed set of oddly-cased and repeated header fields.
/// - `/continue`: an unsolicited `100 Continue` with its own header, then the real reply.
/// - `/status/CODE`: that status with a small JSON error body.
/// - `/slow`: headers promising 1000 body bytes, then silence until the client hangs up.
/// - `/reset` and `/truncate`: 100,000 of 1,000,000 body bytes, then a TCP reset or a close.
enum TestRoutes {
    @Sendable static func handle(_ request: TestRequest, on connection: TestConnection) -> Bool {
        let path = request.path
        let isHead = request.method == "HEAD"
        if path == "/checksum" {
            var hash = FNV1a64()
            var length = 0
            guard connection.readBody(length: request.contentLength, { piece in
                piece.withUnsafeBytes { hash.update($0) }
                length += piece.count
            }) else { return false }
            let expect = [("X-Saw-Expect", request.header("expect") == nil ? "no" : "yes")]
            return reply(
                connection, status: 200, headers: expect, body: Array("length=\(length) fnv=\(FNV1a64.hex(hash.value))".utf8)
            )
        }
        var body: [UInt8] = []
        guard request.contentLength <= 1 << 20,
              connection.readBody(length: request.contentLength, { body.append(contentsOf: $0) })
        else { return false }

        if path == "/echo-first-only", connection.requestCount > 1 {
            // The race a kept-alive connection loses when the server times it out just as the
            // client reuses it: the request is read, then the connection closes unanswered.
            return false
        }
        if path.hasPrefix("/echo") {
            var headers = [("X-Echo-Method", request.method), ("X-Echo-Target", request.target)]
            headers += request.headers.map { ("X-Req-\($0.0.lowercased())", $0.1) }
            let sent = reply(connection, status: 200, headers: headers, body: body, omitBody: isHead)
            // `/echo-then-drop` closes without warning, like a server's idle timeout.
            return sent && path != "/echo-then-drop"
        }
        if path.hasPrefix("/bytes/"), let count = Int(path.dropFirst("/bytes/".count)) {
            guard connection.sendHead(status: 200, headers: [], contentLength: count) else { return false }
            if isHead { return true }
            var offset = 0
            while offset < count {
                let piece = TestPattern.bytes(at: offset, count: min(256 * 1024, count - offset))
                guard connection.send(piece) else { return false }
                offset += piece.count
            }
            return true
        }
        if path == "/headers" {
            let headers = [
                ("Content-Type", "application/json"), ("X-MiXeD-CaSe", "  padded value  "),
                ("x-repeated", "first"), ("X-Repeated", "second"), ("X-Empty", ""),
            ]
            return reply(connection, status: 200, headers: headers, body: Array("{}".utf8))
        }
        if path == "/continue" {
            guard connection.send(Array("HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n".utf8)) else { return false }
            return reply(connection, status: 201, headers: [("X-Final", "yes")], body: Array("done".utf8))
        }
        if path.hasPrefix("/status/"), let status = Int(path.dropFirst("/status/".count)) {
            return reply(connection, status: status, body: Array("{\"error\":\"status \(status)\"}".utf8))
        }
        if path == "/slow" {
            connection.sendHead(status: 200, headers: [], contentLength: 1000)
            connection.waitForPeerClose()
            return false
        }
        if path == "/reset" || path == "/truncate" {
            connection.sendHead(status: 200, headers: [], contentLength: 1_000_000)
            connection.send(TestPattern.bytes(at: 0, count: 100_000))
            if path == "/reset" { connection.abortWithReset() }
            return false
        }
        return reply(connection, status: 404, body: Array("no route".utf8))
    }

    private static func reply(
        _ connection: TestConnection, status: Int, headers: [(String, String)] = [], body: [UInt8],
        omitBody: Bool = false
    ) -> Bool {
        guard connection.sendHead(status: status, headers: headers, contentLength: body.count) else { return false }
        return omitBody || connection.send(body)
    }
}
