import Foundation

/// One parsed request head.
public struct TestRequest: Sendable {
    public var method: String
    public var target: String
    public var headers: [(String, String)]

    public var path: Substring { target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var contentLength: Int { header("content-length").flatMap { Int($0) } ?? 0 }
}

/// Serves requests on one accepted socket until the peer closes, a route ends the
/// connection, or the server stops. All I/O is buffered here; routes are the server's.
public final class TestConnection {
    public let descriptor: Int32
    let server: TestServer
    private var buffer: [UInt8] = []
    /// Requests read on this connection so far, the current one included.
    public private(set) var requestCount = 0

    init(descriptor: Int32, server: TestServer) {
        self.descriptor = descriptor
        self.server = server
        // Sends give up every 200 ms to re-check `isStopping`, so a client that stops
        // reading cannot wedge the server.
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func serve() {
        defer { close(descriptor) }
        while let request = readHead() {
            server.countRequest()
            requestCount += 1
            guard server.routes(request, self) else { return }
            if request.header("connection")?.lowercased() == "close" { return }
        }
    }

    /// Ends the connection with a TCP reset instead of an orderly close.
    public func abortWithReset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    // MARK: Reading

    /// Waits for more bytes; false on EOF, error or server stop.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while !server.isStopping {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            guard ready > 0 else { return false }
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        return false
    }

    /// Reads up to the blank line ending the head and parses it.
    func readHead() -> TestRequest? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                return Self.parse(head)
            }
            guard buffer.count < 64 * 1024, fill() else { return nil }
        }
    }

    private static func parse(_ head: String) -> TestRequest? {
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count == 3 else { return nil }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return TestRequest(method: String(parts[0]), target: String(parts[1]), headers: headers)
    }

    /// Streams exactly `length` body bytes to `consume` without holding them all.
    public func readBody(length: Int, _ consume: (ArraySlice<UInt8>) -> Void) -> Bool {
        var remaining = length
        while remaining > 0 {
            if buffer.isEmpty, !fill() { return false }
            let take = min(remaining, buffer.count)
            consume(buffer[0..<take])
            buffer.removeSubrange(0..<take)
            remaining -= take
        }
        return true
    }

    /// The request's whole body, by Content-Length or chunked transfer coding (a test's
    /// small bodies only); nil when the connection ends first or the chunking is malformed.
    /// Answers `Expect: 100-continue` first, as a server must before the client sends.
    public func readWholeBody(of request: TestRequest) -> [UInt8]? {
        if request.header("expect")?.lowercased() == "100-continue", !send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) {
            return nil
        }
        var body: [UInt8] = []
        guard request.header("transfer-encoding")?.lowercased() == "chunked" else {
            return readBody(length: request.contentLength) { body.append(contentsOf: $0) } ? body : nil
        }
        while true {
            guard let sizeLine = readLine(), let size = Int(sizeLine.split(separator: ";")[0], radix: 16), size >= 0 else { return nil }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return body
            }
            guard readBody(length: size, { body.append(contentsOf: $0) }), readLine() == "" else { return nil }
        }
    }

    /// One CRLF-terminated line, without the CRLF.
    private func readLine() -> String? {
        while true {
            if let end = buffer.firstRange(of: [13, 10]) {
                let line = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                return line
            }
            guard buffer.count < 64 * 1024, fill() else { return nil }
        }
    }

    /// Blocks until the peer closes the connection or the server stops (used to stall).
    public func waitForPeerClose() {
        while fill() { buffer.removeAll() }
    }

    // MARK: Writing

    /// Sends everything; false if the peer went away or the server is stopping.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                if server.isStopping { return false }
            } else {
                return false
            }
        }
        return true
    }

    @discardableResult
    public func sendHead(status: Int, headers: [(String, String)], contentLength: Int) -> Bool {
        var text = "HTTP/1.1 \(status) Status\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(contentLength)\r\n\r\n"
        return send(Array(text.utf8))
    }
}
