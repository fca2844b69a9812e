import SitefsAPI

/// One row of `items`, as stored.
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

    init(row: SQLRow) throws {
        id = try row.int("id")
        siteID = try row.int("site_id")
        parentID = try row.optionalInt("parent_id")
        name = try row.text("name")
        guard let kind = ItemKind(rawValue: try row.text("kind")) else {
            throw StoreFailure("item \(id) has an unknown kind")
        }
        self.kind = kind
        size = try row.int("size")
        contentType = try row.optionalText("content_type")
        createdAt = try row.int("created_at")
        modifiedAt = try row.int("modified_at")
        createdBy = try row.text("created_by")
        modifiedBy = try row.text("modified_by")
        etag = try row.text("etag")
        blob = try row.optionalText("blob")
        listSeq = try row.int("list_seq")
    }

    var isContainer: Bool { kind != .file }

    /// The API's view of this row for a caller with the given access to its site.
    func item(access: SiteAccess, ids: ItemIDCodec) -> Item {
        Item(
            id: ids.apiID(for: id), parentID: parentID.map(ids.apiID(for:)), siteID: ids.apiID(for: siteID), name: name,
            kind: kind, size: size, contentType: contentType,
            createdAt: Timestamp(microsecondsSinceEpoch: createdAt),
            modifiedAt: Timestamp(microsecondsSinceEpoch: modifiedAt),
            createdBy: createdBy, modifiedBy: modifiedBy, etag: etag,
            capabilities: access.capabilities(for: kind))
    }

    static func fetchAll(_ db: any SQLTransaction, sql: String, arguments: [any SQLArgument]) throws -> [ItemRow] {
        try db.rows(sql: sql, arguments: arguments).map(ItemRow.init(row:))
    }

    static func fetchOne(_ db: any SQLTransaction, sql: String, arguments: [any SQLArgument]) throws -> ItemRow? {
        try db.row(sql: sql, arguments: arguments).map(ItemRow.init(row:))
    }

    static func fetch(_ db: any SQLTransaction, id: Int64) throws -> ItemRow? {
        try fetchOne(db, sql: "SELECT * FROM items WHERE id = ?", arguments: [id])
    }

    static func fetch(_ db: any SQLTransaction, parentID: Int64, name: String) throws -> ItemRow? {
        try fetchOne(db, sql: "SELECT * FROM items WHERE parent_id = ? AND name = ?", arguments: [parentID, name])
    }
}
