import Foundation
import SitefsTestSupport
import Testing

/// The fault proxy, driven by curl (as libcurl in the mount daemon will see it) and by a bare
/// socket client where a test must control which request travels on which connection.
/// Timing assertions are lower bounds or generous deadlines, never speed claims.
@Suite struct FaultProxyTests {
    @Test func passForwardsBothWaysIncludingALargeUpload() throws {
        try withProxy { proxy, upstream in
            let hello = try curl(["--max-time", "20", proxy.url + "/hello"])
            #expect(hello.status == 0, "\(hello.err)")
            #expect(hello.out == "hello")

            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let input = directory.appendingPathComponent("upload"), output = directory.appendingPathComponent("echo")
            let payload = Data((0..<5 * 1024 * 1024).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) })
            try payload.write(to: input)
            let echo = try curl(["--max-time", "60", "--data-binary", "@" + input.path, "-o", output.path,
                                 "-w", "%{http_code}", proxy.url + "/echo"])
            #expect(echo.status == 0, "\(echo.err)")
            #expect(echo.out == "200")
            #expect(try Data(contentsOf: output) == payload)

            #expect(proxy.connectionsAccepted == 2)
            #expect(proxy.requestsSeen == 2)
            #expect(proxy.faultsInjected == 0)
            #expect(upstream.handledRequests == 2)
        }
    }

    @Test func requestsOnAKeptAliveConnectionAreCountedOneByOne() throws {
        try withProxy { proxy, upstream in
            let url = proxy.url + "/hello"
            let result = try curl(["--max-time", "20", "-w", "|%{http_code} %{num_connects}\n", url, url, url])
            #expect(result.status == 0, "\(result.err)")
            // One new connection, then two reuses of it.
            #expect(result.lines == ["hello|200 1", "hello|200 0", "hello|200 0"])
            #expect(proxy.connectionsAccepted == 1)
            #expect(proxy.requestsSeen == 3)
            #expect(upstream.acceptedConnections == 1)
            #expect(upstream.handledRequests == 3)
        }
    }

    @Test func refuseFailsFastAndNeverReachesTheServer() throws {
        try withProxy { proxy, upstream in
            proxy.mode = .refuse
            let refused = try curl(["--max-time", "10", proxy.url + "/hello"])
            #expect(refused.status != 0)
            #expect(refused.seconds < 5)
            #expect(proxy.connectionsAccepted == 1)
            #expect(proxy.requestsSeen == 0)
            #expect(proxy.faultsInjected == 1)
            #expect(upstream.acceptedConnections == 0)

            // Injected once: the next connection is refused, the one after is served.
            proxy.mode = .pass
            proxy.injectOnce(.refuse, times: 1)
            #expect(try curl(["--max-time", "10", proxy.url + "/hello"]).status != 0)
            let served = try curl(["--max-time", "10", proxy.url + "/hello"])
            #expect(served.status == 0, "\(served.err)")
            #expect(served.out == "hello")
            #expect(proxy.faultsInjected == 2)
            #expect(proxy.pendingInjections == 0)
            #expect(upstream.handledRequests == 1)
        }
    }

    @Test func blackholeLetsClientTimeoutsFire() throws {
        try withProxy { proxy, upstream in
            proxy.mode = .blackhole
            let result = try curl(["--max-time", "2", proxy.url + "/hello"])
            #expect(result.status == 28, "curl exit \(result.status): \(result.err)")  // 28: timed out
            #expect(result.seconds < 10)
            #expect(proxy.faultsInjected == 1)
            #expect(upstream.acceptedConnections == 0)
        }
    }

    @Test func delayHoldsBackEachChunk() throws {
        try withProxy { proxy, _ in
            proxy.mode = .delay(.milliseconds(300))
            let result = try curl(["--max-time", "20", "-w", "|%{time_total}", proxy.url + "/hello"])
            #expect(result.status == 0, "\(result.err)")
            let parts = result.out.split(separator: "|")
            #expect(parts.first == "hello")
            let seconds = Double(parts.last ?? "") ?? 0
            #expect(seconds >= 0.3, "took \(seconds) s")
            #expect(proxy.faultsInjected == 1)
        }
    }

    @Test func resetAfterCutsADownloadShort() throws {
        try withProxy { proxy, _ in
            let url = proxy.url + "/bytes/1048576"
            proxy.mode = .resetAfter(bytes: 1000)
            let cut = try curl(["--max-time", "20", "-o", "/dev/null", "-w", "%{size_download}", url])
            // 56: recv failure (connection reset); 18: partial file.
            #expect([56, 18].contains(cut.status), "curl exit \(cut.status): \(cut.err)")
            #expect((Int(cut.out) ?? .max) < 1000, "downloaded \(cut.out) body bytes")

            proxy.mode = .pass
            let whole = try curl(["--max-time", "20", "-o", "/dev/null", "-w", "%{size_download}", url])
            #expect(whole.status == 0, "\(whole.err)")
            #expect(whole.out == "1048576")
        }
    }

    @Test func respondAnswersWithoutContactingTheServer() throws {
        try withProxy { proxy, upstream in
            proxy.mode = .respond(status: 503, headers: [("Retry-After", "7")], body: "down for maintenance")
            let get = try curl(["--max-time", "20", "-w", "|%{http_code}|%header{retry-after}", proxy.url + "/hello"])
            #expect(get.status == 0, "\(get.err)")
            #expect(get.out == "down for maintenance|503|7")

            // A small body is read and dropped; a large one (curl sends "Expect: 100-continue"
            // above 1 MiB) is answered before it is sent.
            let small = try curl(["--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}",
                                  "--data-binary", "payload", proxy.url + "/echo"])
            #expect(small.out == "503", "\(small.err)")
            let directory = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let large = directory.appendingPathComponent("large")
            try Data(count: 2 * 1024 * 1024).write(to: large)
            let big = try curl(["--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}",
                                "--data-binary", "@" + large.path, proxy.url + "/echo"])
            #expect(big.out == "503", "\(big.err)")
            #expect(big.seconds < 5)

            proxy.mode = .respond(status: 429, headers: [("Retry-After", "1")], body: "")
            let limited = try curl(["--max-time", "20", "-w", "|%{http_code}|%header{retry-after}", proxy.url + "/hello"])
            #expect(limited.out == "|429|1", "\(limited.err)")

            #expect(proxy.requestsSeen == 4)
            #expect(proxy.faultsInjected == 4)
            #expect(upstream.acceptedConnections == 0)
            #expect(upstream.handledRequests == 0)
        }
    }

    @Test func injectOnceFailsTheNextRequestsThenRecovers() throws {
        try withProxy { proxy, upstream in
            let url = proxy.url + "/hello"
            proxy.injectOnce(.respond(status: 500, headers: [], body: "boom"), times: 2)
            let result = try curl(["--max-time", "20", "-w", "|%{http_code}\n", url, url, url])
            #expect(result.status == 0, "\(result.err)")
            #expect(result.lines == ["boom|500", "boom|500", "hello|200"])
            // Each fault closes its connection, so curl reconnects after each.
            #expect(proxy.connectionsAccepted == 3)
            #expect(proxy.requestsSeen == 3)
            #expect(proxy.faultsInjected == 2)
            #expect(proxy.pendingInjections == 0)
            #expect(upstream.handledRequests == 1)
        }
    }

    @Test func injectOnceHitsARequestOnAReusedConnection() throws {
        try withProxy { proxy, upstream in
            let url = proxy.url + "/hello"
            // Injections queue: the first request passes, the next two fail.
            proxy.injectOnce(.pass, times: 1)
            proxy.injectOnce(.respond(status: 500, headers: [], body: "boom"), times: 2)
            let result = try curl(["--max-time", "20", "-w", "|%{http_code} %{num_connects}\n", url, url, url, url])
            #expect(result.status == 0, "\(result.err)")
            // The second request travels on the first one's connection (0 new connects).
            #expect(result.lines == ["hello|200 1", "boom|500 0", "boom|500 1", "hello|200 1"])
            #expect(proxy.connectionsAccepted == 3)
            #expect(proxy.requestsSeen == 4)
            #expect(proxy.faultsInjected == 2)
            #expect(upstream.handledRequests == 2)
        }
    }

    @Test func modeChangesHitTheNextRequestOfAnOpenConnection() throws {
        try withProxy { proxy, upstream in
            let connection = try RawConnection(port: proxy.port)
            // A chunked upload: the proxy must find where it ends to see the next request.
            try connection.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
                                + "5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n")
            let first = connection.readResponse()
            #expect(first?.status == 200)
            #expect(first?.body == "hello world")

            proxy.mode = .respond(status: 503, headers: [], body: "busy")
            try connection.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            let second = connection.readResponse()
            #expect(second?.status == 503)
            #expect(second?.body == "busy")
            #expect(connection.readsEndOfStream(), "a fault must close the connection")

            #expect(proxy.connectionsAccepted == 1)
            #expect(proxy.requestsSeen == 2)
            #expect(proxy.faultsInjected == 1)
            #expect(upstream.handledRequests == 1)
        }
    }

    /// The setter resets open connections before it returns, so the reset is already on the
    /// way when the client next reads; a request sent now could race it (send may or may not
    /// see ECONNRESET), so the test reads only.
    @Test func refuseResetsAnOpenConnectionAtOnce() throws {
        try withProxy { proxy, upstream in
            let connection = try RawConnection(port: proxy.port)
            try connection.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(connection.readResponse()?.body == "hello")
            proxy.mode = .refuse
            #expect(connection.readResponse() == nil)
            #expect(connection.lastError == ECONNRESET, "expected a reset, got errno \(connection.lastError)")
            #expect(upstream.handledRequests == 1)
        }
    }

    @Test func stopEndsEveryConnectionPromptly() throws {
        let upstream = try TestServer(routes: upstreamRoutes)
        defer { #expect(upstream.stop(), "upstream threads did not stop") }
        let proxy = try FaultProxy(upstreamPort: Int(upstream.port))
        defer { proxy.stop() }

        proxy.mode = .blackhole
        let silent = try RawConnection(port: proxy.port)
        try silent.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        // The mode is read on accept, which may come after connect(2) returns.
        #expect(eventually { proxy.connectionsAccepted == 1 }, "the proxy never accepted")
        proxy.mode = .delay(.seconds(60))
        let slow = try RawConnection(port: proxy.port)
        try slow.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(eventually { proxy.requestsSeen == 1 }, "the delayed request never arrived")

        let started = ContinuousClock.now
        #expect(proxy.stop())
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(silent.readsEndOfStream())
        #expect(slow.readsEndOfStream())
        #expect(throws: (any Error).self, "nothing listens after stop()") { try RawConnection(port: proxy.port) }
        #expect(proxy.stop(), "a second stop() is harmless")

        // Dropping the last reference stops the proxy too.
        var port = 0
        do { port = try FaultProxy(upstreamPort: Int(upstream.port)).port }
        #expect(throws: (any Error).self, "nothing listens after deinit") { try RawConnection(port: port) }
    }
}

// MARK: - Harness

/// Runs `body` against an upstream server with a proxy in front of it. Both always stop,
/// and the test fails if their threads do not.
private func withProxy(_ body: (FaultProxy, TestServer) throws -> Void) throws {
    let upstream = try TestServer(routes: upstreamRoutes)
    defer { #expect(upstream.stop(), "upstream threads did not stop") }
    let proxy = try FaultProxy(upstreamPort: Int(upstream.port))
    defer { #expect(proxy.stop(), "proxy threads did not stop") }
    try body(proxy, upstream)
}

private struct CurlResult {
    let status: Int32
    let out: String
    let err: String
    let seconds: Double
    var lines: [String] { out.split(separator: "\n").map(String.init) }
}

/// Runs /usr/bin/curl quietly (errors still on stderr). Callers pass --max-time; `run`
/// kills curl if even that does not end it.
private func curl(_ arguments: [String], timeout: TimeInterval = 90) throws -> CurlResult {
    let started = ContinuousClock.now
    let result = try run(URL(fileURLWithPath: "/usr/bin/curl"), ["-sS"] + arguments, timeout: timeout)
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return CurlResult(status: result.status, out: result.out, err: result.err, seconds: seconds)
}

private func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-fault-proxy-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

private struct TestSocketError: Error {
    let call: String
    let code: Int32
}

/// A TCP socket connected to 127.0.0.1:port.
private func loopbackSocket(port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestSocketError(call: "socket", code: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard result == 0 else {
        let code = errno
        close(descriptor)
        throw TestSocketError(call: "connect", code: code)
    }
    return descriptor
}

private func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let count = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
        if count > 0 {
            sent += count
        } else if !(count < 0 && errno == EINTR) {
            return false
        }
    }
    return true
}

/// Buffered reads of HTTP/1.1 pieces from a socket; nil at end of stream, error or timeout.
private struct SocketReader {
    let descriptor: Int32
    private var buffer: [UInt8] = []
    private(set) var lastError: Int32 = 0

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    private mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        lastError = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { lastError = errno }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
    }

    private mutating func upTo(_ terminator: [UInt8]) -> String? {
        while true {
            if let range = buffer.firstRange(of: terminator) {
                defer { buffer.removeSubrange(..<range.upperBound) }
                return String(decoding: buffer[..<range.lowerBound], as: UTF8.self)
            }
            guard fill() else { return nil }
        }
    }

    mutating func line() -> String? { upTo([13, 10]) }

    /// The head of a request or response: first line and lowercased header names.
    mutating func head() -> (first: String, headers: [String: String])? {
        guard let text = upTo([13, 10, 13, 10]) else { return nil }
        let lines = text.components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (lines[0], headers)
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard fill() else { return nil }
        }
        defer { buffer.removeSubrange(..<count) }
        return Array(buffer[..<count])
    }

    /// A Content-Length or chunked body, as `headers` describe it.
    mutating func body(headers: [String: String]) -> [UInt8]? {
        guard headers["transfer-encoding"]?.lowercased().contains("chunked") == true else {
            return bytes(Int(headers["content-length"] ?? "0") ?? 0)
        }
        var body: [UInt8] = []
        while let line = line() {
            guard let size = Int(line.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            if size == 0 {
                while let trailer = self.line() {
                    if trailer.isEmpty { return body }
                }
                return nil
            }
            guard let data = bytes(size), self.line() == "" else { return nil }
            body += data
        }
        return nil
    }

    /// True if the peer closed (or reset) the connection, false on data or timeout.
    mutating func atEndOfStream() -> Bool {
        buffer.isEmpty && !fill() && lastError != EAGAIN
    }
}

/// A bare kept-alive HTTP client on one TCP connection. Reads give up after 5 s.
private final class RawConnection {
    private let descriptor: Int32
    private var reader: SocketReader

    init(port: Int) throws {
        descriptor = try loopbackSocket(port: port)
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        reader = SocketReader(descriptor)
    }

    deinit { close(descriptor) }

    /// errno of the last failed read (ECONNRESET after a reset, EAGAIN after a timeout).
    var lastError: Int32 { reader.lastError }

    func send(_ text: String) throws {
        guard sendAll(descriptor, Array(text.utf8)) else { throw TestSocketError(call: "send", code: errno) }
    }

    func readResponse() -> (status: Int, body: String)? {
        guard let head = reader.head(), let status = Int(head.first.split(separator: " ").dropFirst().first ?? ""),
              let body = reader.body(headers: head.headers) else { return nil }
        return (status, String(decoding: body, as: UTF8.self))
    }

    func readsEndOfStream() -> Bool { reader.atEndOfStream() }
}

// MARK: - The upstream server

/// What the upstream server answers for these tests (the kit's `TestServer`, kept alive):
/// GET /hello answers "hello", GET /bytes/N answers N bytes, POST /echo answers the request
/// body (Content-Length or chunked). Its counts of connections and requests tell whether
/// the proxy reached it at all.
@Sendable private func upstreamRoutes(_ request: TestRequest, _ connection: TestConnection) -> Bool {
    guard let body = connection.readWholeBody(of: request) else { return false }
    var status = "200 OK", content: [UInt8] = []
    if request.method == "GET", request.path == "/hello" {
        content = Array("hello".utf8)
    } else if request.method == "GET", request.path.hasPrefix("/bytes/"), let count = Int(request.path.dropFirst("/bytes/".count)) {
        content = [UInt8](repeating: UInt8(ascii: "x"), count: count)
    } else if request.method == "POST", request.path == "/echo" {
        content = body
    } else {
        status = "404 Not Found"
    }
    return connection.send(Array("HTTP/1.1 \(status)\r\nContent-Length: \(content.count)\r\n\r\n".utf8) + content)
}
