import SitefsCrypto

/// Keys the server makes for itself and keeps in its database: so every instance that
/// shares the database uses the same ones, and what they sealed (cursors, ids) stays
/// valid across restarts.
enum ServerSecrets {
    /// The 32-byte key called `name`, made on first use. A race between two first starts
    /// is settled by the database: one insert wins and both read it back.
    static func key(named name: String, in metadata: MetadataStore) throws -> [UInt8] {
        let candidate = SecureRandom.bytes(count: 32)
        return try metadata.database.writeBlocking { db -> [UInt8] in
            try db.execute(sql: "INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                           arguments: [name, candidate])
            guard let stored = try db.row(sql: "SELECT value FROM secrets WHERE name = ?", arguments: [name]),
                  let value = try? stored.bytes("value"), value.count == 32
            else { throw StoreFailure("the key '\(name)' in the database is damaged") }
            return value
        }
    }
}
