import Foundation

/// The queue of file versions whose text waits to be indexed (`search_jobs`, see
/// `SearchSchema`), and the writes of the index itself. Every function runs inside a
/// transaction its caller opened: queuing in the write that stores the version, so a version
/// committed is a version queued, even across a crash.
enum SearchJobs {
    /// How long a claimed job is its worker's: past it, another worker (any instance) may
    /// take it, so a worker that died mid-job delays it by this much and loses nothing. Longer
    /// than a whole claimed batch can take (`ExtractionLimits.timeLimit` per job).
    static let lease: Int64 = 10 * 60 * 1_000_000
    /// Jobs a worker claims at once.
    static let batch = 8
    /// A job that failed this often (the database refusing its row, not a document that
    /// cannot be read, which is an outcome) is dropped and its file recorded as failed.
    static let maximumAttempts: Int64 = 5

    /// Queues the current version of file `item` (replacing what it had queued: an older
    /// version queued and not yet indexed is stale, and a worker holding it gives it up).
    static func enqueue(_ db: any SQLTransaction, item: Int64, etag: String, at now: Int64) throws {
        try db.execute(sql: """
            INSERT INTO search_jobs (item_id, etag, queued_at, claimed_until, attempts) VALUES (?, ?, ?, 0, 0)
            ON CONFLICT (item_id) DO UPDATE SET etag = excluded.etag, queued_at = excluded.queued_at,
                claimed_until = 0, attempts = 0
            """, arguments: [item, etag, now])
    }

    /// Queues every current file, of one site or all (the v5 migration, `index rebuild`).
    /// Returns how many.
    @discardableResult
    static func enqueueEveryFile(_ db: any SQLTransaction, site: Int64?, at now: Int64) throws -> Int64 {
        let scope = site == nil ? "" : " AND site_id = ?"
        let count = try db.int(sql: "SELECT count(*) FROM items WHERE kind = 'file' AND symlink_target IS NULL AND blob IS NOT NULL\(scope)",
                               arguments: site.map { [$0] } ?? []) ?? 0
        try db.execute(sql: """
            INSERT INTO search_jobs (item_id, etag, queued_at, claimed_until, attempts)
            SELECT id, etag, ?, 0, 0 FROM items WHERE kind = 'file' AND symlink_target IS NULL AND blob IS NOT NULL\(scope)
            ON CONFLICT (item_id) DO UPDATE SET etag = excluded.etag, queued_at = excluded.queued_at,
                claimed_until = 0, attempts = 0
            """, arguments: [now] + (site.map { [$0] } ?? []))
        return count
    }

    /// A job a worker holds: the version, and where its bytes are.
    struct Claimed: Sendable, Equatable {
        let itemID: Int64
        let etag: String
        let name: String
        let blob: String
        let attempts: Int64
    }

    /// Claims up to `batch` jobs whose lease is over (or never began), oldest first, for
    /// `lease`. Jobs of items whose current version is no longer the queued one cannot occur
    /// (a new version replaces the row); a job without a file behind it is dropped here.
    static func claim(_ db: any SQLTransaction, engine: SQLEngine, at now: Int64) throws -> [Claimed] {
        let rows = try db.rows(sql: claimSQL(engine), arguments: [now, batch])
        var claimed: [Claimed] = []
        for row in rows {
            let itemID = try row.int("item_id")
            let etag = try row.text("etag")
            guard let item = try db.row(sql: "SELECT name, blob, etag FROM items WHERE id = ? AND kind = 'file' AND symlink_target IS NULL",
                                        arguments: [itemID]),
                  let blob = try item.optionalText("blob"), try item.text("etag") == etag
            else {
                try db.execute(sql: "DELETE FROM search_jobs WHERE item_id = ? AND etag = ?", arguments: [itemID, etag])
                continue
            }
            let attempts = try row.int("attempts") + 1
            try db.execute(sql: "UPDATE search_jobs SET claimed_until = ?, attempts = ? WHERE item_id = ?",
                           arguments: [now + lease, attempts, itemID])
            claimed.append(Claimed(itemID: itemID, etag: etag, name: try item.text("name"), blob: blob, attempts: attempts))
        }
        return claimed
    }

    /// The jobs `claim` takes (arguments: now, how many), oldest first. It reads the queue in
    /// that order through `search_jobs_in_order` (schema v6) and skips the few rows leased
    /// out, so a claim costs the same with 10 or 100,000 files queued (an import, `index
    /// rebuild`). Every write of the server waits for it while it runs.
    static func claimSQL(_ engine: SQLEngine) -> String {
        """
        SELECT search_jobs.item_id, search_jobs.etag, search_jobs.attempts FROM search_jobs
        WHERE search_jobs.claimed_until <= ? ORDER BY search_jobs.queued_at, search_jobs.item_id LIMIT ?\(SearchSQL.skipLocked(engine))
        """
    }

    /// What the worker read from one claimed version.
    struct Indexed: Sendable {
        /// "complete", "truncated", "unsupported" or "failed".
        let outcome: String
        let detail: String?
        let text: String
        let words: String
    }

    /// Stores the text of `job` and ends the job, if its version is still the file's
    /// current one; a stale result (a newer version came meanwhile, or the file went) is
    /// dropped and the job row, which names the newer version by then, left for it.
    /// Returns whether it was stored.
    @discardableResult
    static func complete(_ db: any SQLTransaction, job: Claimed, with result: Indexed, at now: Int64) throws -> Bool {
        guard try db.exists(sql: "SELECT 1 FROM items WHERE id = ? AND etag = ?", arguments: [job.itemID, job.etag]) else {
            try db.execute(sql: "DELETE FROM search_jobs WHERE item_id = ? AND etag = ?", arguments: [job.itemID, job.etag])
            return false
        }
        try db.execute(sql: """
            INSERT INTO search_text (item_id, etag, outcome, detail, text, words, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (item_id) DO UPDATE SET etag = excluded.etag, outcome = excluded.outcome, detail = excluded.detail,
                text = excluded.text, words = excluded.words, indexed_at = excluded.indexed_at
            """, arguments: [job.itemID, job.etag, result.outcome, result.detail, result.text, result.words, now])
        try db.execute(sql: "DELETE FROM search_jobs WHERE item_id = ? AND etag = ?", arguments: [job.itemID, job.etag])
        return true
    }

    /// Hands a job back after a failure of the server's own (its lease ends at once), or,
    /// after `maximumAttempts`, records the file as failed with no text.
    static func giveBack(_ db: any SQLTransaction, job: Claimed, reason: String, at now: Int64) throws {
        if job.attempts < maximumAttempts {
            try db.execute(sql: "UPDATE search_jobs SET claimed_until = 0 WHERE item_id = ? AND etag = ?",
                           arguments: [job.itemID, job.etag])
        } else {
            try complete(db, job: job, with: Indexed(outcome: "failed", detail: String(reason.prefix(500)), text: "", words: ""), at: now)
        }
    }

    static func status(_ db: any SQLTransaction) throws -> SearchIndexStatus {
        SearchIndexStatus(pending: try db.int(sql: "SELECT count(*) FROM search_jobs") ?? 0,
               indexed: try db.int(sql: "SELECT count(*) FROM search_text WHERE outcome <> 'failed'") ?? 0,
               failed: try db.int(sql: "SELECT count(*) FROM search_text WHERE outcome = 'failed'") ?? 0)
    }
}
