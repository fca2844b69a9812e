import SitefsAPI

extension DocumentStore {
    /// Makes the stored version `etag` of a file its newest version: one new version row,
    /// with a new etag, the caller as author and the server's time, naming the *same* blob.
    /// Nothing is copied and nothing is lost: the content it replaces stays a version too.
    ///
    /// Restoring the current version is a new version as well, not a no-op: one rule, and
    /// the history shows that someone restored it (a client that asked gets a new etag,
    /// which its next save is based on).
    ///
    /// Checked in one write transaction, in the order the other writes use: the file (404,
    /// 400 `not_a_file`), the grant (403), the version (404 `no_such_version`, checked before
    /// the condition like any other part of the request), `condition` (412 with the current
    /// item), and a lock for editing whose token `locks` lacks (423).
    ///
    /// Blobs shared between versions: every path that deletes blob files keeps those some
    /// version still names (`Mutation.unreferenced`), and the collector only takes blobs no
    /// version names, so the shared blob lives while any of its versions does.
    public func restore(_ id: String, version etag: String, condition: VersionCondition?, by caller: Caller,
                        locks: LockTokens = .none) async throws -> Item {
        try await metadata.write { db in
            let now = clock().microseconds
            let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now)
            guard file.row.kind == .file else {
                throw APIError.badRequest("'\(file.row.name)' is not a file: only files have versions", code: "not_a_file")
            }
            try file.requireWritable()
            guard let stored = try db.row(sql: "SELECT blob, size FROM versions WHERE item_id = ? AND etag = ?",
                                          arguments: [file.row.id, etag])
            else { throw APIError.noSuchVersion(etag) }
            try VersionCondition.check(condition, file)
            try locks.requireOpen(file.row)

            let blob = try stored.text("blob")
            let size = try stored.int("size")
            let newEtag = BlobStore.newName()
            // The time of the restore, as an upload gets the time it arrived: the content
            // changed now, so programs that compare times (make, rsync) see the change.
            let modifiedAt = Timestamp.now().microseconds
            try db.execute(
                sql: "UPDATE items SET size = ?, etag = ?, blob = ?, modified_at = ?, modified_by = ? WHERE id = ?",
                arguments: [size, newEtag, blob, modifiedAt, caller.name, file.row.id])
            try db.execute(
                sql: "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [file.row.id, newEtag, size, blob, modifiedAt, caller.name])
            // The restored content is the current one: the search index reads its text again.
            try SearchJobs.enqueue(db, item: file.row.id, etag: newEtag, at: now)
            try Mutation.recordChange(db, site: file.row.siteID, item: file.row.id)
            return try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now).item
        }
    }
}

extension APIError {
    /// 404: the file has no stored version with this etag.
    static func noSuchVersion(_ etag: String) -> APIError {
        APIError(.notFound, code: "no_such_version", "this file has no version '\(etag.prefix(80))'")
    }
}
