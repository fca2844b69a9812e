import Foundation

/// Why a request produced no HTTP response.
///
/// A response with a 4xx/5xx status is not an error here: the caller gets it and decides.
/// These cases exist so the daemon can map failures to EIO and decide whether to retry;
/// descriptions carry curl's own message and never a request header value.
public enum HTTPClientError: Error, CustomStringConvertible {
    /// No connection was made: refused, host unresolvable, network unreachable.
    case cannotConnect(String)
    /// The connect timeout, the low-speed limit (a stalled transfer) or the overall timeout fired.
    case timedOut(String)
    /// The connection broke mid-exchange: reset, closed early, or a response cut short.
    case connectionReset(String)
    /// A memory sink received more than its limit.
    case responseTooLarge(limit: Int)
    /// Reading the upload file or writing the download file failed locally.
    case localIO(operation: String, path: String?, errno: Int32)
    /// The request could not be expressed (bad path or header characters); nothing was sent.
    case invalidRequest(String)
    /// A `.chunks` sink threw; the caller's error is kept.
    case sinkFailed(any Error)
    /// The request's `isCancelled` said so, or its sink threw `CancellationError`; the
    /// transfer was abandoned.
    case cancelled
    /// Any other libcurl failure, with curl's description.
    case curl(code: Int, message: String)

    /// Whether trying again later could succeed: the server was unreachable, slow or
    /// dropped the connection. Everything else would fail the same way again.
    public var isTransient: Bool {
        switch self {
        case .cannotConnect, .timedOut, .connectionReset: return true
        case .responseTooLarge, .localIO, .invalidRequest, .sinkFailed, .cancelled, .curl: return false
        }
    }

    public var description: String {
        switch self {
        case .cannotConnect(let detail): return "cannot connect: \(detail)"
        case .timedOut(let detail): return "timed out: \(detail)"
        case .connectionReset(let detail): return "connection reset: \(detail)"
        case .responseTooLarge(let limit): return "response body exceeds the limit of \(limit) bytes"
        case .localIO(let operation, let path, let code):
            let message = String(cString: strerror(code))
            if let path { return "\(operation) \(path) failed: \(message) (errno \(code))" }
            return "\(operation) failed: \(message) (errno \(code))"
        case .invalidRequest(let detail): return "invalid request: \(detail)"
        case .sinkFailed(let error): return "response sink failed: \(error)"
        case .cancelled: return "cancelled by the caller"
        case .curl(let code, let message): return "curl error \(code): \(message)"
        }
    }
}
