import Foundation

/// The metadata schema on PostgreSQL: the same tables, columns and indexes as
/// `SQLiteSchema`, in PostgreSQL's types. Versioned: each migration runs once, in order,
/// recorded in `schema_migrations`; append new ones, never edit old ones, and make the same
/// change in `SQLiteSchema`.
///
/// Names are `COLLATE "C"`: equal only when their bytes are, whatever the database's
/// locale (an NFC and an NFD "café" are two names, as on SQLite and in the mount).
/// Flags are 0/1 integers, as on SQLite, so the statements are the same text.
enum PostgresSchema {
    static let migrations: [(version: String, statements: [String])] = [
        ("v1", [
            """
            CREATE TABLE users (
                id BIGSERIAL PRIMARY KEY,
                name TEXT COLLATE "C" NOT NULL UNIQUE,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE sessions (
                token_hash TEXT PRIMARY KEY,
                user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE items (
                id BIGSERIAL PRIMARY KEY,
                site_id BIGINT NOT NULL,
                parent_id BIGINT REFERENCES items(id) ON DELETE CASCADE,
                name TEXT COLLATE "C" NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('site', 'folder', 'file')),
                size BIGINT NOT NULL DEFAULT 0 CHECK (size >= 0),
                content_type TEXT,
                created_at BIGINT NOT NULL,
                modified_at BIGINT NOT NULL,
                created_by TEXT NOT NULL,
                modified_by TEXT NOT NULL,
                etag TEXT NOT NULL,
                blob TEXT,
                list_seq BIGINT NOT NULL DEFAULT 0
            )
            """,
            "CREATE UNIQUE INDEX items_name_in_folder ON items(parent_id, name) WHERE parent_id IS NOT NULL",
            "CREATE UNIQUE INDEX items_site_name ON items(name) WHERE parent_id IS NULL",
            "CREATE INDEX items_listing ON items(parent_id, list_seq)",
            """
            CREATE TABLE versions (
                id BIGSERIAL PRIMARY KEY,
                item_id BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                etag TEXT NOT NULL,
                size BIGINT NOT NULL,
                blob TEXT NOT NULL,
                modified_at BIGINT NOT NULL,
                modified_by TEXT NOT NULL
            )
            """,
            "CREATE INDEX versions_by_item ON versions(item_id, id)",
            "CREATE INDEX versions_by_blob ON versions(blob)",
            """
            CREATE TABLE grants (
                user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                site_id BIGINT NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                read_only BIGINT NOT NULL,
                PRIMARY KEY (user_id, site_id)
            )
            """,
            """
            CREATE TABLE changes (
                seq BIGSERIAL PRIMARY KEY,
                site_id BIGINT NOT NULL,
                item_id BIGINT NOT NULL,
                deleted BIGINT NOT NULL
            )
            """,
            "CREATE INDEX changes_by_site ON changes(site_id, seq)",
            "CREATE TABLE secrets (name TEXT PRIMARY KEY, value BYTEA NOT NULL)",
        ]),
        ("v3", [
            // Locks for editing (`Locks`) and the display names they show.
            "ALTER TABLE users ADD COLUMN display_name TEXT",
            """
            CREATE TABLE locks (
                item_id BIGINT PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
                lock_id TEXT NOT NULL UNIQUE,
                token_hash TEXT NOT NULL,
                holder_user_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
                holder TEXT NOT NULL,
                holder_name TEXT NOT NULL,
                device TEXT NOT NULL,
                application TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX locks_by_expiry ON locks(expires_at)",
        ]),
        ("v4", [
            // Modes and symbolic links, stored as on SQLite (see `SQLiteSchema` v4).
            "ALTER TABLE items ADD COLUMN mode BIGINT",
            "ALTER TABLE items ADD COLUMN symlink_target TEXT",
        ]),
        // Search, as on SQLite (see `SearchSchema`); then `dataSteps`.
        ("v5", SearchSchema.postgresStatements),
        // The search queue in claiming order, as on SQLite.
        ("v6", SearchSchema.claimOrderStatements),
    ]

    /// What a migration does after its statements, in the same transaction: work on the rows
    /// in Swift (names folded as search compares them), the same code as on SQLite.
    static let dataSteps: [String: @Sendable (any SQLTransaction) throws -> Void] = [
        "v5": SearchSchema.fillV5,
    ]

    /// Applies what `schema_migrations` lacks, in one transaction that holds the write lock,
    /// so instances starting together migrate once and no write runs on a half-made schema.
    /// A database newer than this program (a version it does not know) is refused.
    static func migrate(_ db: any SQLTransaction) throws -> [String] {
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)")
        let applied = Set(try db.texts(sql: "SELECT version FROM schema_migrations"))
        let known = Set(migrations.map(\.version))
        if let unknown = applied.subtracting(known).sorted().first {
            throw StoreFailure("the database has schema version \(unknown), which this sitefs-server does not know; run a newer sitefs-server")
        }
        var ran: [String] = []
        for migration in migrations where !applied.contains(migration.version) {
            for statement in migration.statements { try db.execute(sql: statement) }
            try dataSteps[migration.version]?(db)
            try db.execute(sql: "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                           arguments: [migration.version, Int64(Date().timeIntervalSince1970)])
            ran.append(migration.version)
        }
        return ran
    }
}
