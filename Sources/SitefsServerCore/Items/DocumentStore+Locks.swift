import SitefsAPI
import SitefsCrypto

/// Locks for editing: one person (on one device, in one program) is editing a file, and
/// everyone else's writes to it wait.
///
/// A lock names a file, its holder (account and display name, device, application) and
/// when it ends: `expires_at`, a timeout from when it was taken or last refreshed. What
/// holds, and why:
/// - At most one live lock per file (`locks` is keyed by the item), taken in a write
///   transaction, which all instances serialise: of two takers exactly one wins.
/// - A lock with `expires_at <= now` is dead everywhere at once (reads, enforcement,
///   taking), whether or not `sweepExpiredLocks` has removed its row yet: a holder that
///   vanished never blocks anyone past its timeout.
/// - The token is handed out once (`LockGrant`) and kept as its SHA-256 only. Writes to a
///   locked file (content, rename, move, mtime, rename-over onto it, delete, delete of a
///   folder above it) go through only with the token, checked in the write's own
///   transaction (`LockTokens.requireOpen`): no race between check and write. Reads never
///   wait for a lock.
/// - Taking, releasing, breaking and the sweep record a change of the item, so every
///   client following the feed sees the lock come and go; a refresh records none (nothing
///   a client shows changes but the expiry).
extension DocumentStore {
    /// Takes a lock on a file for `caller`, or refreshes the live one whose token `tokens`
    /// carries (a new expiry `timeout` seconds from now, the same token); a new lock takes
    /// the one token `tokens` carries as its own when it is long enough. `created` says
    /// which. 400 `not_a_file` for folders and sites, 403 with a read-only grant, 423 with
    /// the lock when someone holds it: another user, and the caller too on another device
    /// (without the token), since a person on two machines must see their own lock.
    public func takeLock(on id: String, _ request: LockRequestBody, tokens: LockTokens, by caller: Caller) async throws
        -> (grant: LockGrant, created: Bool) {
        let request = try request.validated()
        let timeout = Int64(request.timeout ?? LockRequestBody.defaultTimeout) * 1_000_000
        return try await metadata.write { db in
            let now = clock().microseconds
            let file = try lockableFile(id, for: caller, in: db, at: now)
            if let live = file.row.lock {
                guard let token = tokens.token(opening: live) else { throw APIError.locked(live.api) }
                var refreshed = live
                refreshed.expiresAt = now + timeout
                try db.execute(sql: "UPDATE locks SET expires_at = ? WHERE item_id = ?", arguments: [refreshed.expiresAt, live.itemID])
                return (LockGrant(lock: refreshed.api, token: token), false)
            }
            // A dead lock's row may still be there (not swept yet): it makes way.
            try db.execute(sql: "DELETE FROM locks WHERE item_id = ?", arguments: [file.row.id])
            // The client's own token when it sent one (long enough to be unguessable), so a
            // request whose answer was lost is a refresh when sent again, and the client
            // knows its lock by id (`LockIdentity`) whatever reached it; else a new one.
            let token = tokens.soleClientToken ?? LockIdentity.newToken()
            let displayName = try caller.userID.flatMap { userID in
                try db.row(sql: "SELECT display_name FROM users WHERE id = ?", arguments: [userID])?.optionalText("display_name")
            }
            let lock = LockRow(
                itemID: file.row.id, lockID: LockIdentity.lockID(forToken: token, item: file.item.id), tokenHash: AccountStore.tokenHash(token),
                holderUserID: caller.userID, holder: caller.name, holderName: displayName ?? caller.name,
                device: request.device, application: request.application, createdAt: now, expiresAt: now + timeout)
            try db.execute(
                sql: """
                    INSERT INTO locks (item_id, lock_id, token_hash, holder_user_id, holder, holder_name, device, application,
                                       created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [lock.itemID, lock.lockID, lock.tokenHash, lock.holderUserID, lock.holder, lock.holderName,
                            lock.device, lock.application, lock.createdAt, lock.expiresAt])
            try Mutation.recordChange(db, site: file.row.siteID, item: file.row.id)
            return (LockGrant(lock: lock.api, token: token), true)
        }
    }

    /// Ends the lock on a file: released with its token, or broken without one (no
    /// `Lock-Token` at all) by the holder's own account or the administrator. A token that
    /// does not open the live lock is refused like no right to break it (423): it is a
    /// lock that already ended, and must not end its successor (the same person's lock from
    /// another device). No live lock: nothing to do. Returns the lock ended, if any.
    @discardableResult
    public func releaseLock(on id: String, tokens: LockTokens, by caller: Caller) async throws -> ItemLock? {
        try await metadata.write { db in
            let now = clock().microseconds
            let file = try lockableFile(id, for: caller, in: db, at: now)
            guard let live = file.row.lock else { return nil }
            let allowed = tokens.isEmpty ? live.mayBeBroken(by: caller) : tokens.opens(live)
            guard allowed else { throw APIError.locked(live.api) }
            try Locks.end(live, site: file.row.siteID, in: db)
            return live.api
        }
    }

    /// Removes locks that have expired, recording a change for each file so clients see the
    /// lock go. Returns how many. `serve` calls it every few seconds; a read first, so an
    /// idle server takes no write lock for nothing.
    @discardableResult
    public func sweepExpiredLocks() async throws -> Int {
        let now = clock().microseconds
        let any = try await metadata.read { db in
            try db.exists(sql: "SELECT 1 FROM locks WHERE expires_at <= ? LIMIT 1", arguments: [now])
        }
        guard any else { return 0 }
        return try await metadata.write { db in
            // Looked at again inside the write: another instance may have swept them meanwhile.
            let expired = try db.rows(
                sql: "SELECT \(LockRow.columns), items.site_id FROM locks JOIN items ON items.id = locks.item_id WHERE locks.expires_at <= ?",
                arguments: [now])
            for row in expired {
                guard let lock = try LockRow(joined: row) else { continue }
                try Locks.end(lock, site: try row.int("site_id"), in: db)
            }
            return expired.count
        }
    }

    /// The file a lock can be taken on or ended: visible, a file (400 `not_a_file`), with
    /// write access (403).
    private func lockableFile(_ id: String, for caller: Caller, in db: any SQLTransaction, at now: Int64) throws -> VisibleItem {
        let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now)
        guard file.row.kind == .file else {
            throw APIError.badRequest("only files are locked; '\(file.row.name)' is a \(file.row.kind.rawValue)", code: "not_a_file")
        }
        try file.requireWritable()
        return file
    }
}

/// Lock queries the document operations share. All run inside a transaction.
enum Locks {
    /// The first live lock below folder `folder` (at any depth) that `tokens` does not
    /// open, with the locked file's name: what stops the folder's deletion.
    static func firstClosed(below folder: Int64, by tokens: LockTokens, in db: any SQLTransaction, at now: Int64) throws
        -> (lock: LockRow, name: String)? {
        let rows = try db.rows(
            sql: """
                WITH RECURSIVE subtree(id) AS (
                    SELECT ? UNION ALL SELECT items.id FROM items JOIN subtree ON items.parent_id = subtree.id)
                SELECT \(LockRow.columns), items.name FROM locks
                JOIN subtree ON locks.item_id = subtree.id JOIN items ON items.id = locks.item_id
                WHERE locks.expires_at > ? ORDER BY locks.created_at, locks.item_id
                """,
            arguments: [folder, now])
        for row in rows {
            guard let lock = try LockRow(joined: row) else { continue }
            if !tokens.opens(lock) { return (lock, try row.text("name")) }
        }
        return nil
    }

    /// Deletes `lock` and records a change of its file.
    static func end(_ lock: LockRow, site: Int64, in db: any SQLTransaction) throws {
        try db.execute(sql: "DELETE FROM locks WHERE item_id = ? AND lock_id = ?", arguments: [lock.itemID, lock.lockID])
        try Mutation.recordChange(db, site: site, item: lock.itemID)
    }
}

extension LockRequestBody {
    /// The request with every field checked: `device` and `application` at most
    /// `maximumTextBytes` bytes and free of control characters (they are shown in other
    /// people's file managers and the administrator's terminal), `timeout` within
    /// `timeoutRange`. 400 `bad_lock_request` saying which.
    func validated() throws -> LockRequestBody {
        for (field, value) in [("device", device), ("application", application)] {
            guard value.utf8.count <= Self.maximumTextBytes else {
                throw APIError.badRequest("'\(field)' is longer than \(Self.maximumTextBytes) bytes", code: "bad_lock_request")
            }
            guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                throw APIError.badRequest("'\(field)' contains control characters", code: "bad_lock_request")
            }
        }
        if let timeout, !Self.timeoutRange.contains(timeout) {
            throw APIError.badRequest(
                "'timeout' must be \(Self.timeoutRange.lowerBound) to \(Self.timeoutRange.upperBound) seconds", code: "bad_lock_request")
        }
        return self
    }
}
