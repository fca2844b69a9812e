import SitefsAPI
import Foundation

/// Schema v5, search, on both stores: what `SQLiteSchema` and `PostgresSchema` apply, and
/// the data step both run after it.
///
/// - `items.name_folded`, `items.name_stem`: the name folded (`FoldedName`), compared byte
///   for byte by both engines (name search is a substring test on them; no index can serve
///   a substring, and a scan of the caller's items is what it costs, see docs/server.md).
/// - `search_jobs`: versions waiting for their text to be indexed, one row per file (a newer
///   version replaces the row). Queued in the transaction that stores the version, so a
///   crash loses none; claimed by a lease (`claimed_until`), so a worker that dies leaves
///   its jobs to another once the lease ends.
/// - `search_text`: per file, the text of the version indexed (`etag`), as extracted (for
///   snippets) and as its distinct folded words (`SearchFolding.indexWords`), what the
///   engines index: FTS5 (`search_fts`, kept by triggers) on SQLite, a `tsvector` of the
///   'simple' configuration with a GIN index on PostgreSQL. Both rows go with their item
///   (`ON DELETE CASCADE`).
enum SearchSchema {
    /// Schema v6, on both stores: the search queue indexed in the order jobs are claimed
    /// (`SearchJobs.claimSQL`). An index led by `claimed_until` does not serve the claim:
    /// every queued job has 0 there until claimed, so a claim through it reads and sorts the
    /// whole queue (15 ms a claim of 8 with 100,000 files queued, every write of the server
    /// waiting behind it).
    static let claimOrderStatements = [
        "DROP INDEX search_jobs_claimable",
        "CREATE INDEX search_jobs_in_order ON search_jobs(queued_at, item_id)",
    ]

    static let sqliteStatements = """
        ALTER TABLE items ADD COLUMN name_folded TEXT NOT NULL DEFAULT '';
        ALTER TABLE items ADD COLUMN name_stem TEXT NOT NULL DEFAULT '';
        CREATE TABLE search_jobs (
            item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
            etag TEXT NOT NULL,
            queued_at INTEGER NOT NULL,
            claimed_until INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX search_jobs_claimable ON search_jobs(claimed_until, queued_at);
        CREATE TABLE search_text (
            item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
            etag TEXT NOT NULL,
            outcome TEXT NOT NULL,
            detail TEXT,
            text TEXT NOT NULL,
            words TEXT NOT NULL,
            indexed_at INTEGER NOT NULL
        );
        CREATE VIRTUAL TABLE search_fts USING fts5(
            words, content='search_text', content_rowid='item_id', tokenize='unicode61 remove_diacritics 0');
        CREATE TRIGGER search_text_inserted AFTER INSERT ON search_text BEGIN
            INSERT INTO search_fts(rowid, words) VALUES (new.item_id, new.words);
        END;
        CREATE TRIGGER search_text_deleted AFTER DELETE ON search_text BEGIN
            INSERT INTO search_fts(search_fts, rowid, words) VALUES ('delete', old.item_id, old.words);
        END;
        CREATE TRIGGER search_text_updated AFTER UPDATE ON search_text BEGIN
            INSERT INTO search_fts(search_fts, rowid, words) VALUES ('delete', old.item_id, old.words);
            INSERT INTO search_fts(rowid, words) VALUES (new.item_id, new.words);
        END;
        """

    static let postgresStatements = [
        "ALTER TABLE items ADD COLUMN name_folded TEXT COLLATE \"C\" NOT NULL DEFAULT ''",
        "ALTER TABLE items ADD COLUMN name_stem TEXT COLLATE \"C\" NOT NULL DEFAULT ''",
        """
        CREATE TABLE search_jobs (
            item_id BIGINT PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
            etag TEXT NOT NULL,
            queued_at BIGINT NOT NULL,
            claimed_until BIGINT NOT NULL DEFAULT 0,
            attempts BIGINT NOT NULL DEFAULT 0
        )
        """,
        "CREATE INDEX search_jobs_claimable ON search_jobs(claimed_until, queued_at)",
        // Positions stripped: matching is by word prefix, never by phrase, and a tsvector
        // without them stays far below PostgreSQL's 1 MB limit.
        """
        CREATE TABLE search_text (
            item_id BIGINT PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
            etag TEXT NOT NULL,
            outcome TEXT NOT NULL,
            detail TEXT,
            text TEXT NOT NULL,
            words TEXT NOT NULL,
            words_tsv tsvector GENERATED ALWAYS AS (strip(to_tsvector('simple', words))) STORED,
            indexed_at BIGINT NOT NULL
        )
        """,
        "CREATE INDEX search_text_words ON search_text USING GIN (words_tsv)",
    ]

    /// Rows read per statement while folding names in the migration.
    static let migrationBatch = 1000

    /// After the v5 statements, on both stores, in the migration's transaction: every
    /// existing name folded, every current file queued for its text. A loop bounded by the
    /// number of items (each batch moves past the highest id it read).
    static func fillV5(_ db: any SQLTransaction) throws {
        var after: Int64 = -1
        while true {
            let rows = try db.rows(sql: "SELECT id, name FROM items WHERE id > ? ORDER BY id LIMIT ?",
                                   arguments: [after, migrationBatch])
            for row in rows {
                let name = FoldedName(try row.text("name"))
                try db.execute(sql: "UPDATE items SET name_folded = ?, name_stem = ? WHERE id = ?",
                               arguments: [name.folded, name.stem, try row.int("id")])
            }
            guard rows.count == migrationBatch, let last = rows.last else { break }
            after = try last.int("id")
        }
        try SearchJobs.enqueueEveryFile(db, site: nil, at: Int64(Date().timeIntervalSince1970 * 1_000_000))
    }
}
