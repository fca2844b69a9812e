import SitefsAPI

/// A live lock as the administrator lists it: where the file is, and the lock.
public struct LockListing: Sendable, Equatable {
    public let site: String
    /// The file's path inside its site, `/`-separated.
    public let path: String
    public let lock: ItemLock
}

/// The administrator's view of locks (`sitefs-server lock list`, `lock break`): files are
/// named by site and path, as `site add --import` names them.
extension DocumentStore {
    /// Every live lock, oldest first.
    public func liveLocks() async throws -> [LockListing] {
        let now = clock().microseconds
        return try await metadata.read { db in
            let rows = try db.rows(
                sql: "SELECT \(LockRow.columns) FROM locks WHERE locks.expires_at > ? ORDER BY locks.created_at, locks.item_id",
                arguments: [now])
            return try rows.compactMap { row -> LockListing? in
                guard let lock = try LockRow(joined: row) else { return nil }
                let names = try Self.path(of: lock.itemID, in: db)
                return LockListing(site: names[0], path: names.dropFirst().joined(separator: "/"), lock: lock.api)
            }
        }
    }

    /// Breaks the lock on the file at `path` in site `site` (administrator only). Returns the
    /// lock broken, or nil when the file had none. 404 `no_such_path` when there is no such
    /// file, 400 `not_a_file` for a folder.
    @discardableResult
    public func breakLock(site: String, path: String, by caller: Caller) async throws -> ItemLock? {
        guard caller.isAdministrator else { throw APIError.forbidden("locks are broken by path by the administrator only") }
        let file = try await metadata.read { db in try Self.item(site: site, path: path, in: db) }
        return try await releaseLock(on: ids.apiID(for: file), tokens: .none, by: caller)
    }

    /// The row id of the item at `path` (components separated by `/`) in the site named
    /// `site`.
    static func item(site: String, path: String, in db: any SQLTransaction) throws -> Int64 {
        guard var current = try db.int(sql: "SELECT id FROM items WHERE parent_id IS NULL AND name = ?", arguments: [site]) else {
            throw APIError(.notFound, code: "no_such_site", "there is no site '\(site)'")
        }
        for name in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let child = try db.int(sql: "SELECT id FROM items WHERE parent_id = ? AND name = ?", arguments: [current, String(name)])
            else { throw APIError(.notFound, code: "no_such_path", "there is no '\(path)' in site '\(site)'") }
            current = child
        }
        return current
    }

    /// The names from the site down to item `id`.
    static func path(of id: Int64, in db: any SQLTransaction) throws -> [String] {
        var names: [String] = []
        var next: Int64? = id
        while let current = next {
            guard let row = try db.row(sql: "SELECT name, parent_id FROM items WHERE id = ?", arguments: [current]) else {
                throw StoreFailure("item \(current) on the path of \(id) is missing")
            }
            names.append(try row.text("name"))
            next = try row.optionalInt("parent_id")
            guard names.count <= 10_000 else { throw StoreFailure("the folders above item \(id) form a loop") }
        }
        return names.reversed()
    }
}
