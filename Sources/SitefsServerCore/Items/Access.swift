import SitefsAPI

/// Who is making a call: a signed-in user, or the administrator (CLI, import, demo seed),
/// who reaches every site.
public struct Caller: Sendable, Equatable {
    public let userID: Int64?
    public let name: String

    public init(userID: Int64, name: String) {
        self.userID = userID
        self.name = name
    }

    private init(administrator name: String) {
        self.userID = nil
        self.name = name
    }

    public static func administrator(_ name: String) -> Caller { Caller(administrator: name) }

    var isAdministrator: Bool { userID == nil }
}

/// What a caller may do in one site: nothing (not granted), read, or read and write.
enum SiteAccess: Sendable {
    case readOnly
    case readWrite

    func capabilities(for kind: ItemKind) -> [Capability] {
        switch (self, kind) {
        case (.readOnly, _): return [.read]
        case (.readWrite, .site): return [.read, .addChildren]
        case (.readWrite, .folder): return [.read, .rename, .delete, .addChildren]
        case (.readWrite, .file): return [.read, .write, .rename, .delete]
        case (.readWrite, .symlink): return [.read, .rename, .delete]
        }
    }

    /// The caller's access to a site, or nil when it was not granted.
    static func of(_ caller: Caller, site: Int64, in db: any SQLTransaction) throws -> SiteAccess? {
        guard let userID = caller.userID else { return .readWrite }
        let grant = try db.row(
            sql: "SELECT read_only FROM grants WHERE user_id = ? AND site_id = ?", arguments: [userID, site])
        return try grant.map { try $0.bool("read_only") ? .readOnly : .readWrite }
    }
}

/// An item the caller can see, with the caller's access to its site.
struct VisibleItem: Sendable {
    let row: ItemRow
    let access: SiteAccess
    let ids: ItemIDCodec

    var item: Item { row.item(access: access, ids: ids) }

    /// Looks an API id up for a caller, with its lock live at `now`; unknown ids, ids the
    /// server never handed out and ungranted sites are all 404.
    static func find(_ id: String, ids: ItemIDCodec, for caller: Caller, in db: any SQLTransaction, at now: Int64) throws -> VisibleItem {
        guard let key = ids.rowID(for: id), let row = try ItemRow.fetch(db, id: key, at: now),
              let access = try SiteAccess.of(caller, site: row.siteID, in: db)
        else { throw APIError.notFound }
        return VisibleItem(row: row, access: access, ids: ids)
    }

    /// Throws 403 unless the caller may change things in this item's site.
    func requireWritable() throws {
        if case .readOnly = access { throw APIError.readOnly }
    }
}
