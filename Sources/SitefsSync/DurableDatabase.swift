import Foundation
import GRDB

/// The sync engine's SQLite files (the upload journal, the pins): WAL, and synchronous=FULL,
/// so a commit that returned is on the disk and survives `kill -9` and a power cut.
enum DurableDatabase {
    /// Opens (creating) the database at `path`; nil keeps it in memory (tests).
    static func open(_ path: String?) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // Outside any transaction, which is the only place SQLite accepts them.
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        return try path.map { try DatabaseQueue(path: $0, configuration: configuration) } ?? DatabaseQueue(configuration: configuration)
    }
}
