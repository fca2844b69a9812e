import PostgresNIO

/// Which PostgreSQL failures mean "not now" rather than "never": the connection went
/// away, the server is starting or stopping, a statement ran out of time. Those reach the
/// client as 503 with Retry-After (it tries again by itself); anything else stays an error.
enum PostgresFailure {
    /// A connection could not be made at all.
    struct Unreachable: Error, CustomStringConvertible {
        let underlying: any Error
        var description: String { "PostgreSQL is unreachable: \(PostgresFailure.describe(underlying))" }
    }

    static func unreachable(_ error: any Error) -> Unreachable { Unreachable(underlying: error) }

    /// The connection closed while a statement waited for its answer.
    struct Closed: Error, CustomStringConvertible {
        let what: String
        var description: String { "the connection to PostgreSQL closed during \(what)" }
    }

    /// PostgreSQL did not answer within the session's own limit (`PostgresSession.bounded`).
    struct TimedOut: Error, CustomStringConvertible {
        let what: String
        let limit: Duration
        var description: String { "PostgreSQL did not answer \(what) within \(limit)" }
    }

    /// The connection is unusable after this error: the session drops it and reconnects.
    static func isConnectionLost(_ error: any Error) -> Bool {
        if error is Unreachable || error is TimedOut || error is Closed { return true }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection,
             .messageDecodingFailure, .unexpectedBackendMessage, .poolClosed:
            return true
        case .server:
            // 08: connection exception; 57P01-57P03: the server is shutting down or starting.
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return false
        }
    }

    /// Worth trying again shortly (503 + Retry-After).
    static func isTransient(_ error: any Error) -> Bool {
        if isConnectionLost(error) { return true }
        guard let error = error as? PSQLError else { return false }
        if error.code == .queryCancelled { return true }
        guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        // 53: out of resources (too many connections); 57014: statement timeout (the write
        // lock was held too long); 40001/40P01: serialisation failure, deadlock; 55P03: lock.
        return state.hasPrefix("53") || state == "57014" || state == "40001" || state == "40P01" || state == "55P03"
    }

    /// A log line's worth: the library's own description leaves out the server's message.
    static func describe(_ error: any Error) -> String {
        if let error = error as? Unreachable { return describe(error.underlying) }
        guard let error = error as? PSQLError else { return String(describing: error) }
        var parts = ["\(error.code)"]
        if let state = error.serverInfo?[.sqlState] { parts.append("SQLSTATE \(state)") }
        if let message = error.serverInfo?[.message] { parts.append(message) }
        if let underlying = error.underlying { parts.append(String(describing: underlying)) }
        return parts.joined(separator: ": ")
    }
}
