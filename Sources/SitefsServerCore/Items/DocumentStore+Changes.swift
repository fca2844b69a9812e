import SitefsAPI

extension DocumentStore {
    /// Most feed entries one call returns; `has_more` says when to ask again at once.
    static let changeBatch = 1000
    /// Longest long-poll (`wait`) a caller may ask for, in seconds.
    public static let longestChangeWait = 30

    /// What changed in the caller's sites since `cursor`: each item once, as it is now, or
    /// as deleted. Without a cursor: no changes and the cursor of "now", the starting point
    /// for a client that has just listed everything.
    ///
    /// With `wait`, an empty answer is held until a write (on any instance) commits a change
    /// in a site the caller was granted, or `wait` has passed (a long-poll). A commit wakes
    /// only the waiters who see its sites (`CommitSignal`); they look again.
    public func changes(since cursor: String?, for caller: Caller, waitingUpTo wait: Duration = .zero) async throws -> ChangePage {
        guard let userID = caller.userID else { throw APIError.forbidden("the change feed is per user") }
        guard let cursor else {
            let latest = try await metadata.read { db in try db.int(sql: "SELECT MAX(seq) FROM changes") ?? 0 }
            return ChangePage(changes: [], nextCursor: cursors.encode(.changes, latest, for: caller), hasMore: false)
        }
        let after = try cursors.decode(.changes, cursor, for: caller)
        let deadline = ContinuousClock.now + wait
        // What wakes this caller: commits in the sites granted to them.
        var granted: Set<Int64>?
        while true {
            // Noted before looking: a commit after this wakes the wait below at once.
            let seen = metadata.commits.count
            let page = try await changes(after: after, userID: userID, caller: caller)
            guard page.changes.isEmpty, ContinuousClock.now < deadline, !Task.isCancelled else { return page }
            if granted == nil {
                granted = Set(try await metadata.read { db in
                    try db.ints(sql: "SELECT site_id FROM grants WHERE user_id = ?", arguments: [userID])
                })
            }
            await metadata.commits.wait(after: seen, on: granted, until: deadline)
        }
    }

    private func changes(after: Int64, userID: Int64, caller: Caller) async throws -> ChangePage {
        let now = clock().microseconds
        return try await metadata.read { db in
            let rows = try db.rows(sql: """
                    SELECT seq, site_id, item_id FROM changes
                    WHERE seq > ? AND site_id IN (SELECT site_id FROM grants WHERE user_id = ?)
                    ORDER BY seq LIMIT ?
                    """,
                arguments: [after, userID, Self.changeBatch])
            // Later entries for the same item supersede earlier ones: report each item once,
            // at the position of its last change, as it is now.
            var lastPosition: [Int64: Int] = [:]
            for (index, row) in rows.enumerated() { lastPosition[try row.int("item_id")] = index }
            var changes: [Change] = []
            for (index, row) in rows.enumerated() where lastPosition[try row.int("item_id")] == index {
                let itemID = try row.int("item_id")
                let siteID = try row.int("site_id")
                if let current = try ItemRow.fetch(db, id: itemID, at: now),
                   let access = try SiteAccess.of(caller, site: current.siteID, in: db) {
                    changes.append(.item(current.item(access: access, ids: ids)))
                } else {
                    changes.append(.deleted(id: ids.apiID(for: itemID), siteID: ids.apiID(for: siteID)))
                }
            }
            let last = try rows.last?.int("seq") ?? after
            return ChangePage(changes: changes, nextCursor: cursors.encode(.changes, last, for: caller),
                              hasMore: rows.count == Self.changeBatch)
        }
    }
}
