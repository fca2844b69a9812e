import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// One connection to PostgreSQL, used by one worker thread (`PostgresWorkers`) for one
/// transaction at a time, with blocking calls: the store's SQL runs in synchronous
/// closures, as on SQLite, so the same code serves both engines.
///
/// Every wait is bounded: connecting by `connectTimeout`, each statement by the server's
/// `statement_timeout` and, should the server or the network go silent, by `queryTimeout`
/// on this side (`bounded`), after which the connection is given up.
final class PostgresSession: @unchecked Sendable {
    struct Limits: Sendable {
        var connectTimeout: Duration = .seconds(10)
        /// The server cancels a statement running longer (the write lock's wait included).
        var statementTimeout: Duration = .seconds(30)
        /// The watchdog's margin over `statementTimeout`.
        var queryTimeout: Duration = .seconds(40)
    }

    /// Where tests take hold of a transaction to order a race (nothing in production).
    struct Hooks: Sendable {
        /// Runs on the worker thread after a write's statements, before its COMMIT: a test
        /// holds a write open here to show what another instance's write does meanwhile.
        var beforeCommit: (@Sendable () -> Void)?
    }

    private let location: PostgresLocation
    private let limits: Limits
    private let hooks: Hooks
    private let logger: Logger
    private let id: Int
    /// Only its worker thread touches it.
    private var connection: PostgresConnection?

    init(location: PostgresLocation, limits: Limits, hooks: Hooks = .init(), logger: Logger, id: Int) {
        self.location = location
        self.limits = limits
        self.hooks = hooks
        self.logger = logger
        self.id = id
    }

    /// Runs `body` in a transaction: a read sees one snapshot (REPEATABLE READ, read-only:
    /// never fails to serialise); a write first takes the store's write lock (see
    /// `PostgresMetadataDatabase`) and tells the other instances it committed (NOTIFY, sent
    /// by PostgreSQL at the commit).
    func transaction<T>(writing: Bool, changed: ChangedSites = ChangedSites(), _ body: (any SQLTransaction) throws -> T) throws -> T {
        let connection = try connected()
        do {
            if writing {
                try run("BEGIN", on: connection)
                try run("SELECT pg_advisory_xact_lock(\(PostgresMetadataDatabase.writeLockKey))", on: connection)
            } else {
                try run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", on: connection)
            }
            let result = try body(Transaction(session: self, connection: connection, changed: changed))
            if writing {
                if !changed.sites.isEmpty {
                    _ = try rows("SELECT pg_notify(?, ?)", [PostgresMetadataDatabase.commitChannel,
                                                            CommitPayload.encode(changed.sites)], on: connection)
                }
                hooks.beforeCommit?()
            }
            try run("COMMIT", on: connection)
            return result
        } catch {
            if PostgresFailure.isConnectionLost(error) {
                drop()
            } else if (try? run("ROLLBACK", on: connection)) == nil {
                drop()
            }
            throw error
        }
    }

    /// Closes the connection (the worker is stopping, or it broke).
    func drop() {
        guard let connection else { return }
        self.connection = nil
        // Waited for: the library insists a connection is closed before it is released. One
        // that does not close in time is kept (never released) rather than trap.
        let closing: EventLoopFuture<Void> = connection.close()
        do {
            try Self.bounded(closing, within: .seconds(5), doing: "closing a connection")
        } catch {
            Self.unclosed.withLock { $0.append(connection) }
        }
    }

    /// Connections that would not close (see `drop`). Lock order: a leaf.
    private static let unclosed = Mutex<[PostgresConnection]>([])

    /// Waits on this worker thread for `future`, at most `limit`, and no longer than
    /// `connection` stays open. The library's own `wait()` has no deadline, and a statement
    /// in flight when PostgreSQL is stopped (`-m immediate`, under load) may never complete
    /// although its connection has closed: without this, a worker would block for good and
    /// the server could not shut down.
    @discardableResult
    static func bounded<T>(_ future: EventLoopFuture<T>, within limit: Duration, doing what: String,
                           on connection: PostgresConnection? = nil) throws -> T {
        let outcome = Outcome<T>()
        future.whenComplete { outcome.set($0) }
        connection?.closeFuture.whenComplete { _ in outcome.set(.failure(PostgresFailure.Closed(what: what))) }
        guard outcome.done.wait(timeout: .now() + .milliseconds(Int(limit.milliseconds))) == .success else {
            throw PostgresFailure.TimedOut(what: what, limit: limit)
        }
        return try outcome.result!.get()
    }

    /// A future's result (or the connection's end, whichever comes first), handed from the
    /// event loop to the waiting worker.
    private final class Outcome<T>: @unchecked Sendable {
        // @unchecked: `result` is written once, under `lock`, before `done` is signalled, and
        // read only after that.
        let done = DispatchSemaphore(value: 0)
        private(set) var result: Result<T, any Error>?
        /// Lock order: a leaf.
        private let lock = NSLock()
        func set(_ value: Result<T, any Error>) {
            let first = lock.withLock { () -> Bool in
                guard result == nil else { return false }
                result = value
                return true
            }
            if first { done.signal() }
        }
    }

    private func connected() throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        drop()
        do {
            let connecting = PostgresConnection.connect(
                on: PostgresConnection.defaultEventLoopGroup.any(),
                configuration: try Self.configuration(for: location, limits: limits), id: id, logger: logger)
            // The library's own connect timeout ends it first; this is the backstop.
            let connection = try Self.bounded(connecting, within: limits.connectTimeout + .seconds(5), doing: "connecting")
            self.connection = connection
            return connection
        } catch {
            throw PostgresFailure.unreachable(error)
        }
    }

    /// How every connection of the store is made (the workers' and the commit listener's).
    static func configuration(for location: PostgresLocation, limits: Limits) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch location.endpoint {
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: location.user, password: location.password,
                                  database: location.database, tls: try Self.tls(location.tls))
        case .socket(let path):
            configuration = .init(unixSocketPath: path, username: location.user, password: location.password,
                                  database: location.database)
        }
        configuration.options.connectTimeout = .milliseconds(limits.connectTimeout.milliseconds)
        configuration.options.additionalStartupParameters = [
            ("application_name", "sitefs-server"),
            ("statement_timeout", String(limits.statementTimeout.milliseconds)),
            // A stopped instance (SIGSTOP, a hung VM) that held the write lock would hold
            // every instance's writes; its transaction is ended after this.
            ("idle_in_transaction_session_timeout", String(limits.queryTimeout.milliseconds)),
        ]
        return configuration
    }

    fileprivate func rows(_ sql: String, _ arguments: [any SQLArgument], on connection: PostgresConnection) throws -> [SQLRow] {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument.sqlValue {
            case .null: binds.appendNull()
            case .integer(let value): binds.append(value)
            case .text(let value): binds.append(value)
            case .bytes(let value): binds.append(ByteBuffer(bytes: value))
            }
        }
        let query = PostgresQuery(unsafeSQL: Self.numberedPlaceholders(sql), binds: binds)
        let result = try Self.bounded(connection.query(query, logger: logger), within: limits.queryTimeout, doing: "a statement",
                                      on: connection)
        return try result.rows.map(Self.row)
    }

    private func run(_ sql: String, on connection: PostgresConnection) throws {
        _ = try rows(sql, [], on: connection)
    }

    /// `?` → `$1`, `$2`, ... outside quoted literals and identifiers: the store's SQL is
    /// written with SQLite's placeholders.
    static func numberedPlaceholders(_ sql: String) -> String {
        var numbered = ""
        numbered.reserveCapacity(sql.utf8.count + 16)
        var count = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                numbered.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                numbered.append(character)
            } else if character == "?" {
                count += 1
                numbered += "$\(count)"
            } else {
                numbered.append(character)
            }
        }
        return numbered
    }

    private static func row(_ row: PostgresRow) throws -> SQLRow {
        var names: [String] = []
        var values: [SQLValue] = []
        for cell in row {
            names.append(cell.columnName)
            values.append(try value(cell))
        }
        return SQLRow(names: names, values: values)
    }

    private static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2: return .integer(Int64(try cell.decode(Int16.self)))
        case .int4: return .integer(Int64(try cell.decode(Int32.self)))
        case .int8: return .integer(try cell.decode(Int64.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .text, .varchar, .name, .bpchar: return .text(try cell.decode(String.self))
        case .bytea: return .bytes(Array(try cell.decode(ByteBuffer.self).readableBytesView))
        // pg_advisory_xact_lock returns void; NOTIFY and COMMIT return no rows at all.
        case .void: return .null
        default: throw StoreFailure("column \(cell.columnName) has type \(cell.dataType), which the store does not use")
        }
    }

    private static func tls(_ mode: PostgresLocation.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        var unchecked = TLSConfiguration.makeClientConfiguration()
        unchecked.certificateVerification = .none
        switch mode {
        case .disable: return .disable
        case .prefer: return .prefer(try NIOSSLContext(configuration: unchecked))
        case .require: return .require(try NIOSSLContext(configuration: unchecked))
        case .verifyFull: return .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }

    /// The store's statements on this session's connection, inside `transaction`.
    private struct Transaction: SQLTransaction {
        let session: PostgresSession
        let connection: PostgresConnection
        let changed: ChangedSites

        func changed(site: Int64) { changed.insert(site) }

        func rows(sql: String, arguments: [any SQLArgument]) throws -> [SQLRow] {
            try session.rows(sql, arguments, on: connection)
        }

        func execute(sql: String, arguments: [any SQLArgument]) throws {
            _ = try session.rows(sql, arguments, on: connection)
        }
    }
}

extension Duration {
    /// Whole milliseconds (for NIO time amounts and PostgreSQL settings).
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
