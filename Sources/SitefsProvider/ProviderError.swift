import SitefsAPI

/// Why a backend call failed, in terms the filesystem maps to errnos and retry decisions.
public enum ProviderError: Error, Sendable, CustomStringConvertible {
    /// No or expired credentials (401): the user must run `sitefs login`.
    case notAuthenticated(String)
    /// The grant does not allow it (403).
    case forbidden(String)
    /// Gone on the server (404); cached knowledge of it should be dropped.
    case notFound
    /// The name is taken (409).
    case nameTaken(String)
    /// The server refused the name (400 invalid_name).
    case invalidName(String)
    /// The item changed since the version the call was based on (412).
    case versionMismatch(current: ProviderItem?)
    /// Someone else holds a lock on the item (423): no write of content, name or existence
    /// goes through until it is released or expires. `by`: the holder, when the server said.
    case locked(by: ProviderLock?)
    /// Moves only happen within a site.
    case crossSite
    /// Another refusal the server explained (400/409/413/416 ...).
    case refused(status: Int, code: String, message: String)
    /// The server could not be reached, timed out or dropped the connection.
    case unreachable(String)
    /// Not tried: the server has not been reachable since `since`, and the mount fails what
    /// needs it at once rather than after the full I/O timeout each time (see
    /// `ConnectionMonitor`). Transient: it works again once the server answers.
    case offline(since: Timestamp)
    /// The server answered 5xx or 429: worth retrying later.
    /// `retryAfter`: seconds the server asked to wait (Retry-After), if it said.
    case serverUnavailable(status: Int, message: String, retryAfter: Double? = nil)
    /// The response broke the API contract (malformed JSON, bad names, negative sizes).
    case invalidResponse(String)
    /// A local file could not be read or written.
    case localIO(String)
    /// The caller gave up (`Cancellation`): nothing is wrong with the server or the item.
    case cancelled

    public var isNotFound: Bool {
        if case .notFound = self { true } else { false }
    }

    public var description: String {
        switch self {
        case .notAuthenticated(let message): return "not signed in: \(message); run `sitefs login`"
        case .forbidden(let message): return "forbidden: \(message)"
        case .notFound: return "not found on the server"
        case .nameTaken(let message): return "name taken: \(message)"
        case .invalidName(let message): return "invalid name: \(message)"
        case .versionMismatch: return "the server has a newer version"
        case .locked(let lock): return lock.map { "locked for editing by \($0.description)" } ?? "locked for editing by someone else"
        case .crossSite: return "items move only within their site"
        case .refused(let status, let code, let message): return "refused (\(status) \(code)): \(message)"
        case .unreachable(let message): return "server unreachable: \(message)"
        case .offline(let since): return "offline since \(since.rfc3339): the server has not been reachable since"
        case .serverUnavailable(let status, let message, _): return "server error \(status): \(message)"
        case .invalidResponse(let message): return "invalid server response: \(message)"
        case .localIO(let message): return "local I/O error: \(message)"
        case .cancelled: return "interrupted by the caller"
        }
    }

    /// How long the server asked to wait before trying again, if it said.
    public var retryAfter: Double? {
        if case .serverUnavailable(_, _, let seconds) = self { return seconds }
        return nil
    }

    /// The server was not reached (in transit, or not tried while offline): nothing it
    /// decided, so nothing to report beyond what the connection's state says.
    public var isUnreachable: Bool {
        switch self {
        case .unreachable, .offline: return true
        default: return false
        }
    }

    /// Worth retrying unchanged later (network trouble, overload), as opposed to a verdict.
    public var isTransient: Bool {
        switch self {
        case .unreachable, .offline, .serverUnavailable: return true
        default: return false
        }
    }
}
