/// One HTTP request, described as a value so it can be built anywhere and retried as is.
///
/// The path is relative to the client's base URL and already percent-encoded (use
/// `PercentEncoding.encodeComponent` for each segment); the client only checks that it
/// contains nothing that could change the request line.
public struct HTTPRequest: Sendable {
    /// Where the request body comes from.
    public enum Body: Sendable, Equatable {
        /// No body (a PUT, POST or PATCH still sends `Content-Length: 0`).
        case none
        /// A body already in memory: small JSON documents.
        case bytes([UInt8])
        /// A file streamed from disk as libcurl asks for it, so a 1 GiB upload never sits
        /// in memory. Its size is taken when the request starts; the file must not change
        /// length while it is sent.
        case file(path: String)
    }

    public var method: HTTPMethod
    /// Path and optional query, e.g. `/v1/items/abc/content?version=3`, already encoded.
    public var path: String
    /// Header fields in the order they are sent. Values are never logged or put in errors,
    /// since `Authorization` carries a bearer token.
    public var headers: [(String, String)]
    public var body: Body
    /// Whether the client's overall timeout applies. Large transfers turn it off and rely on
    /// the low-speed limit to catch a stall, since no fixed deadline fits every file size.
    public var appliesOverallTimeout: Bool
    /// Told how many bytes of the body have been handed to libcurl so far (for progress).
    public var onBodyProgress: (@Sendable (Int64) -> Void)?
    /// Asked as data moves and about once a second while none does; true ends the transfer
    /// with `HTTPClientError.cancelled` (a caller that gave up: a signal to a process
    /// waiting on a download). Called on the transfer's own thread.
    public var isCancelled: (@Sendable () -> Bool)?
    /// How long the server may hold its answer on purpose (a long-poll: "answer when
    /// something changes"): the overall limit is extended by this much. The low-speed limit
    /// is not: a server that holds an answer keeps sending (sitefs-server's heartbeats), so
    /// a connection that goes silent is still taken for a stalled one.
    public var expectedWait: Duration = .zero

    public init(
        method: HTTPMethod, path: String, headers: [(String, String)] = [], body: Body = .none,
        appliesOverallTimeout: Bool = true
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.appliesOverallTimeout = appliesOverallTimeout
    }
}

/// Every textual view of a request (print, string interpolation, debugger, `dump`) shows
/// method, path, header names and body kind, and leaves header values out on purpose, so a
/// request can be logged or appear in a test failure without leaking the bearer token.
extension HTTPRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        let names = headers.map(\.0).joined(separator: ", ")
        return "\(method.rawValue) \(path) [headers: \(names)] [\(bodySummary)]"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "method": method.rawValue, "path": path, "headerNames": headers.map(\.0), "body": bodySummary,
                "appliesOverallTimeout": appliesOverallTimeout,
            ],
            displayStyle: .struct
        )
    }

    private var bodySummary: String {
        switch body {
        case .none: return "no body"
        case .bytes(let bytes): return "\(bytes.count) bytes"
        case .file(let path): return "file \(path)"
        }
    }
}
