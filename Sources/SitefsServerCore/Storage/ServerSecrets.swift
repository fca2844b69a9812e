import Foundation
import GRDB
import SitefsCrypto

/// Keys the server makes for itself and keeps in its database: so every instance that
/// shares the database uses the same ones, and what they sealed (cursors, ids) stays
/// valid across restarts.
enum ServerSecrets {
    /// The 32-byte key called `name`, made on first use. A race between two first starts
    /// is settled by the database: one insert wins and both read it back.
    static func key(named name: String, in pool: DatabasePool) throws -> [UInt8] {
        try pool.write { db -> [UInt8] in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
            try db.execute(sql: "INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)",
                           arguments: [name, Data(SecureRandom.bytes(count: 32))])
            guard let stored = try Data.fetchOne(db, sql: "SELECT value FROM secrets WHERE name = ?", arguments: [name]),
                  stored.count == 32
            else { throw DatabaseError(message: "the key '\(name)' in the database is damaged") }
            return Array(stored)
        }
    }
}
