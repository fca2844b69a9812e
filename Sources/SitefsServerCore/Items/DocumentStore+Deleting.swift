import SitefsAPI

extension DocumentStore {
    /// Deletes a file, or a folder with everything in it. Each removed item gets its own
    /// entry in the change feed, so clients can drop exactly what they cached.
    ///
    /// A file locked for editing, the item itself or any file below a folder, stops the
    /// whole delete (423 naming it) unless its token is among `locks`: checked in the same
    /// transaction, so no lock taken meanwhile is deleted from under its holder.
    public func delete(_ id: String, condition: VersionCondition?, by caller: Caller, locks: LockTokens = .none) async throws {
        let orphanedBlobs = try await metadata.write { db -> [String] in
            let now = clock().microseconds
            let victim = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now)
            guard victim.row.kind != .site else { throw APIError.forbidden("sites are deleted by the administrator") }
            try victim.requireWritable()
            try VersionCondition.check(condition, victim)
            try locks.requireOpen(victim.row)
            if victim.row.isContainer, let lock = try Locks.firstClosed(below: victim.row.id, by: locks, in: db, at: now) {
                throw APIError.locked(lock.lock.api, what: lock.name)
            }
            // The item and everything below it, each statement over the whole subtree at once
            // (item by item, a folder of 1,000 files would be 2,000 statements).
            let subtree = """
                WITH RECURSIVE subtree(id) AS (
                    SELECT ? UNION ALL SELECT items.id FROM items JOIN subtree ON items.parent_id = subtree.id)
                """
            let blobs = try db.texts(sql: subtree + " SELECT versions.blob FROM versions JOIN subtree ON versions.item_id = subtree.id",
                                     arguments: [victim.row.id])
            // The site as a literal: an integer, and a parameter in a SELECT list has no type
            // PostgreSQL could infer for the column it fills.
            try db.execute(sql: subtree + " INSERT INTO changes (site_id, item_id, deleted) SELECT \(victim.row.siteID), id, 1 FROM subtree",
                           arguments: [victim.row.id])
            db.changed(site: victim.row.siteID)
            try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [victim.row.id])
            // Versions share blobs (a restore's); none outside the subtree today, but only
            // what no version names any more is deleted.
            return try Mutation.unreferenced(blobs, in: db)
        }
        // After the commit: a crash before they go leaves unreferenced blobs, never a version
        // without its bytes.
        blobs.removeInBackground(orphanedBlobs)
    }
}
