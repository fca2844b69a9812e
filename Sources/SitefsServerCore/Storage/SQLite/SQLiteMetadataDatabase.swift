import Foundation
import GRDB
import Synchronization

/// The metadata in one SQLite file (WAL, synchronous=FULL, foreign keys on): the embedded
/// default, `--data DIR`.
///
/// WAL lets readers (listings, downloads) run while one writer commits; FULL makes every
/// committed version survive a power cut, which is what a document archive promises. The
/// admin commands open the same file from another process while the server runs, so a busy
/// database is waited for rather than failed.
final class SQLiteMetadataDatabase: MetadataDatabase {
    let pool: DatabasePool
    var engine: SQLEngine { .sqlite }
    /// Lock order: a leaf (observers are called after it is released).
    private let observers = Mutex<[@Sendable (Set<Int64>?) -> Void]>([])

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try SQLiteSchema.migrator.migrate(pool)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await pool.read { db in try body(GRDBTransaction(db: db, changed: ChangedSites())) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        let changed = ChangedSites()
        let result = try await pool.write { db in try body(GRDBTransaction(db: db, changed: changed)) }
        committed(changed)
        return result
    }

    func writeBlocking<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) throws -> T {
        let changed = ChangedSites()
        let result = try pool.write { db in try body(GRDBTransaction(db: db, changed: changed)) }
        committed(changed)
        return result
    }

    /// Another process's writes (an admin command) are not observed: a long-poll sees them
    /// when its wait ends.
    func observeCommits(_ observer: @escaping @Sendable (Set<Int64>?) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    private func committed(_ changed: ChangedSites) {
        guard !changed.sites.isEmpty else { return }
        for observer in observers.withLock({ $0 }) { observer(changed.sites) }
    }

    func close() {
        try? pool.close()
    }
}

/// A GRDB database connection inside `read` or `write` (or a migration's, `SQLiteSchema`).
struct GRDBTransaction: SQLTransaction {
    let db: Database
    let changed: ChangedSites

    func changed(site: Int64) { changed.insert(site) }

    func rows(sql: String, arguments: [any SQLArgument]) throws -> [SQLRow] {
        try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments.map(Self.value))).map { row in
            SQLRow(names: Array(row.columnNames), values: row.databaseValues.map(Self.value))
        }
    }

    func execute(sql: String, arguments: [any SQLArgument]) throws {
        try db.execute(sql: sql, arguments: StatementArguments(arguments.map(Self.value)))
    }

    private static func value(_ argument: any SQLArgument) -> DatabaseValue {
        switch argument.sqlValue {
        case .null: return .null
        case .integer(let value): return value.databaseValue
        case .text(let value): return value.databaseValue
        case .bytes(let value): return Data(value).databaseValue
        }
    }

    private static func value(_ stored: DatabaseValue) -> SQLValue {
        switch stored.storage {
        case .null: return .null
        case .int64(let value): return .integer(value)
        case .string(let value): return .text(value)
        case .blob(let value): return .bytes(Array(value))
        // The schema has no REAL column; a computed one would be a bug worth seeing.
        case .double(let value): return .text(String(value))
        }
    }
}
