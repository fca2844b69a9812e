/// A blocking HTTP/1.1 client for the mount daemon's FUSE worker threads.
///
/// FUSE calls arrive on plain threads that must answer synchronously, so this client blocks
/// the calling thread rather than offering async APIs. Any number of threads may call
/// `send` at once: each request checks an easy handle out of a pool and returns it when done,
/// and returned handles keep their connections alive for the next request. Redirects are
/// never followed; a 3xx comes back as a response.
public final class HTTPClient: Sendable {
    /// Scheme, host, port and optional path prefix, e.g. `https://files.example.org/api`.
    public let baseURL: String
    public let timeouts: Timeouts
    /// PEM file of the certificate authorities trusted for HTTPS (nil: the system's).
    public let caFile: String?
    private let pool: EasyHandlePool

    /// - Parameter maxIdleHandles: how many idle handles (and their connections) are kept;
    ///   a burst of more concurrent requests makes extra handles that are closed afterwards.
    public init(baseURL: String, timeouts: Timeouts = .default, maxIdleHandles: Int = 8, caFile: String? = nil) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.timeouts = timeouts
        self.caFile = caFile
        pool = EasyHandlePool(capacity: maxIdleHandles)
    }

    /// Sends the request and waits for the whole response, on the calling thread.
    ///
    /// A response with any status is returned; only failures to get one throw.
    public func send(_ request: HTTPRequest, into sink: ResponseSink = .memory()) throws(HTTPClientError) -> HTTPResponse {
        let url = try url(for: request.path)
        let handle = try pool.checkOut()
        defer { pool.checkIn(handle) }
        return try Transfer(handle: handle, url: url, timeouts: timeouts, caFile: caFile).run(request, into: sink)
    }

    /// Idle handles in the pool; for tests.
    var idleHandleCount: Int { pool.idleCount }

    /// Joins base and path, refusing characters that must have been percent-encoded:
    /// controls, space, non-ASCII, and `#` (which would end the path as a fragment).
    private func url(for path: String) throws(HTTPClientError) -> String {
        let valid = path.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "#") }
        guard valid else {
            throw .invalidRequest("path \(path.debugDescription) contains characters that must be percent-encoded")
        }
        return path.hasPrefix("/") ? baseURL + path : baseURL + "/" + path
    }
}
