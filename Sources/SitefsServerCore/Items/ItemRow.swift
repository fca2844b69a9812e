import SitefsAPI

/// One row of `items`, as stored, with the item's live lock when it was read with one
/// (`ItemRow.fetch*` join it: one query per item or page, never one per item of a page).
struct ItemRow: Sendable {
    var id: Int64
    var siteID: Int64
    var parentID: Int64?
    var name: String
    var kind: ItemKind
    var size: Int64
    var contentType: String?
    var createdAt: Int64
    var modifiedAt: Int64
    var createdBy: String
    var modifiedBy: String
    var etag: String
    var blob: String?
    var listSeq: Int64
    /// Permission bits set with `chmod`; nil when never set.
    var mode: Int64?
    /// A symbolic link's target; such a row reads as kind `symlink` (see `SQLiteSchema` v4).
    var symlinkTarget: String?
    /// The live lock (`expires_at` after the time the row was read at); nil when there is
    /// none, or the row was read without the join (sites).
    var lock: LockRow?

    init(row: SQLRow) throws {
        id = try row.int("id")
        siteID = try row.int("site_id")
        parentID = try row.optionalInt("parent_id")
        name = try row.text("name")
        guard let kind = ItemKind(rawValue: try row.text("kind")) else {
            throw StoreFailure("item \(id) has an unknown kind")
        }
        symlinkTarget = try row.optionalText("symlink_target")
        self.kind = symlinkTarget != nil && kind == .file ? .symlink : kind
        mode = try row.optionalInt("mode")
        size = try row.int("size")
        contentType = try row.optionalText("content_type")
        createdAt = try row.int("created_at")
        modifiedAt = try row.int("modified_at")
        createdBy = try row.text("created_by")
        modifiedBy = try row.text("modified_by")
        etag = try row.text("etag")
        blob = try row.optionalText("blob")
        listSeq = try row.int("list_seq")
        lock = try LockRow(joined: row)
    }

    var isContainer: Bool { kind == .site || kind == .folder }

    /// The API's view of this row for a caller with the given access to its site.
    func item(access: SiteAccess, ids: ItemIDCodec) -> Item {
        Item(
            id: ids.apiID(for: id), parentID: parentID.map(ids.apiID(for:)), siteID: ids.apiID(for: siteID), name: name,
            kind: kind, size: size, contentType: contentType,
            createdAt: Timestamp(microsecondsSinceEpoch: createdAt),
            modifiedAt: Timestamp(microsecondsSinceEpoch: modifiedAt),
            createdBy: createdBy, modifiedBy: modifiedBy, etag: etag,
            capabilities: access.capabilities(for: kind), lock: lock?.api,
            mode: mode.flatMap { ItemMode.range.contains(Int($0)) ? Int($0) : nil }, symlinkTarget: symlinkTarget)
    }

    /// Items matching `condition` (a `WHERE` clause over `items`, columns qualified, with
    /// `ORDER BY`/`LIMIT` if wanted), each with its lock live at `now` (microseconds): a
    /// lock that expired is no lock, whether or not the sweeper has removed it yet.
    static func fetchAll(_ db: any SQLTransaction, where condition: String, arguments: [any SQLArgument], at now: Int64) throws -> [ItemRow] {
        try db.rows(sql: "\(selectWithLock) WHERE \(condition)", arguments: [now] + arguments).map(ItemRow.init(row:))
    }

    static func fetchOne(_ db: any SQLTransaction, where condition: String, arguments: [any SQLArgument], at now: Int64) throws -> ItemRow? {
        try db.row(sql: "\(selectWithLock) WHERE \(condition)", arguments: [now] + arguments).map(ItemRow.init(row:))
    }

    static func fetch(_ db: any SQLTransaction, id: Int64, at now: Int64) throws -> ItemRow? {
        try fetchOne(db, where: "items.id = ?", arguments: [id], at: now)
    }

    static func fetch(_ db: any SQLTransaction, parentID: Int64, name: String, at now: Int64) throws -> ItemRow? {
        try fetchOne(db, where: "items.parent_id = ? AND items.name = ?", arguments: [parentID, name], at: now)
    }

    /// `items` with the live lock's columns (`LockRow.columns`); its one placeholder is the
    /// time locks must outlive.
    private static let selectWithLock =
        "SELECT items.*, \(LockRow.columns) FROM items LEFT JOIN locks ON locks.item_id = items.id AND locks.expires_at > ?"
}
