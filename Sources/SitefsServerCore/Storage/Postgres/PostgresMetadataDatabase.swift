import Foundation
import Logging
import Synchronization

/// The metadata in PostgreSQL (`--database URL`), shared by any number of server instances.
///
/// Writes are serialised across all instances by one transaction-level advisory lock,
/// taken first in every write transaction. That keeps the two promises `MetadataDatabase`
/// makes, exactly as SQLite's single writer does:
/// - a condition checked in a write (an `If-Match` etag, a free name) holds at its commit,
///   so of two saves based on one version, through any instances, exactly one wins;
/// - change-feed sequence numbers are taken in commit order, so a reader never sees seq
///   N+1 before N has committed, and a cursor never skips a change that commits later.
/// Reads take no lock and run on every instance in parallel, each on one snapshot.
/// The price: writes do not scale past what one lock holder commits (measured in
/// `scripts/bench`, and in the issue's closing note).
final class PostgresMetadataDatabase: MetadataDatabase {
    /// The advisory lock every write holds (an arbitrary constant: "sitefs" in ASCII).
    static let writeLockKey: Int64 = 0x7369_7465_6673
    /// The NOTIFY channel write transactions signal.
    static let commitChannel = "sitefs_commits"

    let location: PostgresLocation
    var engine: SQLEngine { .postgres }
    private let workers: PostgresWorkers
    private let listener: Mutex<PostgresCommitListener?> = Mutex(nil)
    private let observers = Mutex<[@Sendable (Set<Int64>?) -> Void]>([])
    private let logger: Logger
    /// Whether the last transaction reached PostgreSQL: an outage is logged when it starts and
    /// when it ends, not once per request. Lock order: a leaf.
    private let reachable = Mutex(true)

    /// Connects, applies migrations (`PostgresSchema`) and starts hearing other instances.
    init(location: PostgresLocation, connections: Int = 8, limits: PostgresSession.Limits = .init(),
         hooks: PostgresSession.Hooks = .init(), listening: Bool = true, logger: Logger) throws {
        self.location = location
        self.logger = logger
        var libraryLogger = logger
        libraryLogger.logLevel = .error
        workers = PostgresWorkers(count: connections, queueTimeout: limits.statementTimeout) { index in
            PostgresSession(location: location, limits: limits, hooks: hooks, logger: libraryLogger, id: index)
        }
        do {
            let ran = try workers.runBlocking { session in
                try session.transaction(writing: true) { db in try PostgresSchema.migrate(db) }
            }
            if !ran.isEmpty { logger.info("database \(location): applied schema \(ran.joined(separator: ", "))") }
        } catch {
            workers.close()
            throw StoreFailure("cannot open the database \(location): \(PostgresFailure.describe(error))")
        }
        guard listening else { return }
        let heard = PostgresCommitListener(location: location, limits: limits, logger: logger) { [weak self] sites in
            self?.committed(sites)
        }
        listener.withLock { $0 = heard }
    }

    /// Dropped without `close()` (a test's storage going out of scope): the workers and the
    /// listener would otherwise run on, holding their connections.
    deinit {
        close()
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await transaction(writing: false, body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await transaction(writing: true, body)
    }

    func writeBlocking<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) throws -> T {
        let changed = ChangedSites()
        do {
            let result = try workers.runBlocking { session in try session.transaction(writing: true, changed: changed, body) }
            if !changed.sites.isEmpty { committed(changed.sites) }
            return result
        } catch {
            throw classified(error)
        }
    }

    func observeCommits(_ observer: @escaping @Sendable (Set<Int64>?) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    private func committed(_ sites: Set<Int64>?) {
        for observer in observers.withLock({ $0 }) { observer(sites) }
    }

    func close() {
        listener.withLock { $0 }?.stop()
        workers.close()
    }

    private func transaction<T: Sendable>(writing: Bool, _ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        do {
            let changed = ChangedSites()
            let result = try await workers.run { session in try session.transaction(writing: writing, changed: changed, body) }
            // This instance's long-polls wake now; the others' when PostgreSQL passes the NOTIFY
            // on (this one hears its own too, and looks once more for nothing).
            if !changed.sites.isEmpty { committed(changed.sites) }
            if reachable.withLock({ state in defer { state = true }; return !state }) {
                logger.notice("database \(location) answers again")
            }
            return result
        } catch {
            throw classified(error)
        }
    }

    /// A passing failure becomes 503 + Retry-After (logged when an outage begins); others
    /// go on as they are.
    private func classified(_ error: any Error) -> any Error {
        guard PostgresFailure.isTransient(error) else { return error }
        if reachable.withLock({ state in defer { state = false }; return state }) {
            logger.warning("database \(location) failed (answering 503 until it is back): \(PostgresFailure.describe(error))")
        }
        return APIError.storeUnavailable
    }
}
