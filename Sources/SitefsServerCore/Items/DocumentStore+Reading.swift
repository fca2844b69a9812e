import SitefsAPI

extension DocumentStore {
    public func item(_ id: String, for caller: Caller) async throws -> Item {
        let now = clock().microseconds
        return try await metadata.read { db in try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now).item }
    }

    /// One page of a folder's (or site's) children, in the order they entered it.
    public func children(of id: String, cursor: String?, limit: Int, for caller: Caller) async throws -> ItemPage {
        let after = try cursor.map { try cursors.decode(.children, $0, for: caller) } ?? 0
        let now = clock().microseconds
        return try await metadata.read { db in
            let parent = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now)
            guard parent.row.isContainer else { throw APIError.badRequest("'\(parent.row.name)' is a file, not a folder", code: "not_a_folder") }
            // One query for the page, locks joined.
            let rows = try ItemRow.fetchAll(db, where: "items.parent_id = ? AND items.list_seq > ? ORDER BY items.list_seq LIMIT ?",
                arguments: [parent.row.id, after, limit + 1], at: now)
            let page = rows.prefix(limit)
            let next = rows.count > limit ? page.last.map { cursors.encode(.children, $0.listSeq, for: caller) } : nil
            return ItemPage(items: page.map { $0.item(access: parent.access, ids: ids) }, nextCursor: next)
        }
    }

    /// One page of the sites granted to the caller, by id.
    public func sites(cursor: String?, limit: Int, for caller: Caller) async throws -> ItemPage {
        let after = try cursor.map { try cursors.decode(.sites, $0, for: caller) } ?? 0
        guard let userID = caller.userID else { return ItemPage(items: [], nextCursor: nil) }
        return try await metadata.read { db in
            let rows = try db.rows(sql: """
                    SELECT items.*, grants.read_only AS granted_read_only FROM grants
                    JOIN items ON items.id = grants.site_id
                    WHERE grants.user_id = ? AND items.id > ? ORDER BY items.id LIMIT ?
                    """,
                arguments: [userID, after, limit + 1])
            let page = rows.prefix(limit)
            let items = try page.map { row -> Item in
                let access: SiteAccess = try row.bool("granted_read_only") ? .readOnly : .readWrite
                return try ItemRow(row: row).item(access: access, ids: ids)
            }
            let next = try rows.count > limit ? page.last.map { cursors.encode(.sites, try $0.int("id"), for: caller) } : nil
            return ItemPage(items: items, nextCursor: next)
        }
    }

    /// The versions of a file, newest first.
    public func versions(of id: String, for caller: Caller) async throws -> [Version] {
        try await metadata.read { db in
            let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds)
            guard file.row.kind == .file else { throw APIError.badRequest("only files have versions", code: "not_a_file") }
            return try db.rows(sql: "SELECT etag, size, modified_at, modified_by FROM versions WHERE item_id = ? ORDER BY id DESC",
                arguments: [file.row.id]
            ).map { row in
                Version(etag: try row.text("etag"), size: try row.int("size"),
                        modifiedAt: Timestamp(microsecondsSinceEpoch: try row.int("modified_at")),
                        modifiedBy: try row.text("modified_by"))
            }
        }
    }

    /// Where the bytes of a file (or one of its older versions) are.
    public struct ContentLocation: Sendable {
        public let path: String
        public let size: Int64
        public let etag: String
        public let contentType: String
    }

    public func content(of id: String, version: String?, for caller: Caller) async throws -> ContentLocation {
        try await metadata.read { db in
            let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds)
            // A link's content is its target.
            guard file.row.kind == .file || file.row.kind == .symlink else {
                throw APIError.badRequest("'\(file.row.name)' is a folder", code: "not_a_file")
            }
            let contentType = file.row.contentType ?? "application/octet-stream"
            guard let version, version != file.row.etag else {
                guard let blob = file.row.blob else { throw StoreFailure("file \(file.row.id) has no content") }
                return ContentLocation(path: blobs.path(of: blob), size: file.row.size, etag: file.row.etag, contentType: contentType)
            }
            guard let row = try db.row(sql: "SELECT blob, size FROM versions WHERE item_id = ? AND etag = ?", arguments: [file.row.id, version])
            else { throw APIError.noSuchVersion(version) }
            return ContentLocation(path: blobs.path(of: try row.text("blob")), size: try row.int("size"), etag: version,
                                   contentType: contentType)
        }
    }
}
