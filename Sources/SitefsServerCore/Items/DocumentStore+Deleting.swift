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
            let subtree = try db.ints(sql: """
                    WITH RECURSIVE subtree(id) AS (
                        SELECT ? UNION ALL SELECT items.id FROM items JOIN subtree ON items.parent_id = subtree.id)
                    SELECT id FROM subtree
                    """,
                arguments: [victim.row.id])
            var blobs: [String] = []
            for itemID in subtree {
                blobs += try db.texts(sql: "SELECT blob FROM versions WHERE item_id = ?", arguments: [itemID])
                try Mutation.recordChange(db, site: victim.row.siteID, item: itemID, deleted: true)
            }
            try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [victim.row.id])
            // Versions share blobs (a restore's); none outside the subtree today, but only
            // what no version names any more is deleted.
            return try Mutation.unreferenced(blobs, in: db)
        }
        // After the commit: a crash before this line leaves unreferenced blobs, never a
        // version without its bytes.
        blobs.remove(orphanedBlobs)
    }
}
