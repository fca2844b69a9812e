import Foundation
import GRDB

/// The server's SQLite database (WAL, synchronous=FULL, foreign keys on).
///
/// WAL lets readers (listings, downloads) run while one writer commits; FULL makes every
/// committed version survive a power cut, which is what a document archive promises. The
/// admin commands open the same file from another process while the server runs, so a busy
/// database is waited for rather than failed.
struct MetadataStore: Sendable {
    let pool: DatabasePool
    /// Rung after every write transaction commits (change-feed long-polls wait on it).
    let commits = CommitSignal()

    init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Schema.migrator.migrate(pool)
    }

    func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }

    func write<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        let result = try await pool.write(body)
        commits.committed()
        return result
    }
}
