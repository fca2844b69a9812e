import SitefsAPI

/// Counts for `sitefs-server index status`.
public struct SearchIndexStatus: Sendable, Equatable {
    /// Versions queued for their text, claimed by a worker or not.
    public let pending: Int64
    /// Files whose text is indexed (read whole or in part, or of a type without text).
    public let indexed: Int64
    /// Files whose text could not be read: found by name only.
    public let failed: Int64
}

extension DocumentStore {
    /// Queues every current file of the site named `site` (or of all sites) for its text to
    /// be read again, e.g. after the server learnt to read a new type; returns how many.
    /// Searches keep finding the texts indexed before until the new ones replace them.
    public func rebuildSearchIndex(site: String?) async throws -> Int64 {
        let now = clock().microseconds
        return try await metadata.write { db in
            var siteID: Int64?
            if let site {
                guard let id = try db.int(sql: "SELECT id FROM items WHERE parent_id IS NULL AND name = ?", arguments: [site]) else {
                    throw APIError(.notFound, code: "not_found", "there is no site named '\(site)'")
                }
                siteID = id
            }
            return try SearchJobs.enqueueEveryFile(db, site: siteID, at: now)
        }
    }

    /// How far the index is: pending jobs, files indexed, files that failed.
    public func searchIndexStatus() async throws -> SearchIndexStatus {
        try await metadata.read { db in try SearchJobs.status(db) }
    }
}
