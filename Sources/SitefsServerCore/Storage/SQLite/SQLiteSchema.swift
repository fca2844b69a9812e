import GRDB

/// The metadata schema on SQLite, as GRDB migrations (append new ones; never edit old
/// ones). `PostgresSchema` is the same schema for PostgreSQL; a change goes into both.
///
/// Items form one tree per site: a site row has no parent and `site_id` equal to its own
/// id. `list_seq` orders a folder's children for paging: it is taken from the change
/// feed's sequence when an item enters a folder (created or moved in), so it never repeats
/// and keyset paging on it neither skips nor repeats items while the folder changes.
enum SQLiteSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE users (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL UNIQUE,
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE sessions (
                    token_hash TEXT PRIMARY KEY,
                    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE TABLE items (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    site_id INTEGER NOT NULL,
                    parent_id INTEGER REFERENCES items(id) ON DELETE CASCADE,
                    name TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('site', 'folder', 'file')),
                    size INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),
                    content_type TEXT,
                    created_at INTEGER NOT NULL,
                    modified_at INTEGER NOT NULL,
                    created_by TEXT NOT NULL,
                    modified_by TEXT NOT NULL,
                    etag TEXT NOT NULL,
                    blob TEXT,
                    list_seq INTEGER NOT NULL DEFAULT 0
                );
                CREATE UNIQUE INDEX items_name_in_folder ON items(parent_id, name) WHERE parent_id IS NOT NULL;
                CREATE UNIQUE INDEX items_site_name ON items(name) WHERE parent_id IS NULL;
                CREATE INDEX items_listing ON items(parent_id, list_seq);
                CREATE TABLE versions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                    etag TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    blob TEXT NOT NULL,
                    modified_at INTEGER NOT NULL,
                    modified_by TEXT NOT NULL
                );
                CREATE INDEX versions_by_item ON versions(item_id, id);
                CREATE TABLE grants (
                    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                    site_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
                    read_only INTEGER NOT NULL,
                    PRIMARY KEY (user_id, site_id)
                );
                CREATE TABLE changes (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    site_id INTEGER NOT NULL,
                    item_id INTEGER NOT NULL,
                    deleted INTEGER NOT NULL
                );
                CREATE INDEX changes_by_site ON changes(site_id, seq);
                """)
        }
        migrator.registerMigration("v2") { db in
            // The server's keys (`ServerSecrets`): until v2 the table was made on first use,
            // so a database from then already has it.
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL);
                CREATE INDEX versions_by_blob ON versions(blob);
                """)
        }
        migrator.registerMigration("v3") { db in
            // Locks for editing (`Locks`) and the display names they show.
            try db.execute(sql: """
                ALTER TABLE users ADD COLUMN display_name TEXT;
                CREATE TABLE locks (
                    item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
                    lock_id TEXT NOT NULL UNIQUE,
                    token_hash TEXT NOT NULL,
                    holder_user_id INTEGER REFERENCES users(id) ON DELETE CASCADE,
                    holder TEXT NOT NULL,
                    holder_name TEXT NOT NULL,
                    device TEXT NOT NULL,
                    application TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX locks_by_expiry ON locks(expires_at);
                """)
        }
        migrator.registerMigration("v4") { db in
            // Modes (`chmod`) and symbolic links. A link is a row of kind 'file' with its
            // target here (v1's CHECK on `kind` cannot change without rebuilding `items`);
            // `ItemRow` reads such a row as kind `symlink`. Its content blob holds the target.
            try db.execute(sql: """
                ALTER TABLE items ADD COLUMN mode INTEGER;
                ALTER TABLE items ADD COLUMN symlink_target TEXT;
                """)
        }
        migrator.registerMigration("v5") { db in
            // Search (`SearchSchema`): folded names, the queue of texts to index, the texts
            // and their FTS5 index; existing names folded and files queued.
            try db.execute(sql: SearchSchema.sqliteStatements)
            try SearchSchema.fillV5(GRDBTransaction(db: db, changed: ChangedSites()))
        }
        migrator.registerMigration("v6") { db in
            // The search queue in claiming order (`SearchSchema.claimOrderStatements`).
            for statement in SearchSchema.claimOrderStatements { try db.execute(sql: statement) }
        }
        return migrator
    }
}
