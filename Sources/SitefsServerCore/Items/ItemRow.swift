import GRDB
import SitefsAPI

/// One row of `items`, as stored.
struct ItemRow: FetchableRecord, Sendable {
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

    init(row: Row) throws {
        id = row["id"]
        siteID = row["site_id"]
        parentID = row["parent_id"]
        name = row["name"]
        guard let kind = ItemKind(rawValue: row["kind"]) else {
            throw DatabaseError(message: "item \(id) has an unknown kind")
        }
        self.kind = kind
        size = row["size"]
        contentType = row["content_type"]
        createdAt = row["created_at"]
        modifiedAt = row["modified_at"]
        createdBy = row["created_by"]
        modifiedBy = row["modified_by"]
        etag = row["etag"]
        blob = row["blob"]
        listSeq = row["list_seq"]
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

    static func fetch(_ db: Database, id: Int64) throws -> ItemRow? {
        try ItemRow.fetchOne(db, sql: "SELECT * FROM items WHERE id = ?", arguments: [id])
    }

    static func fetch(_ db: Database, parentID: Int64, name: String) throws -> ItemRow? {
        try ItemRow.fetchOne(db, sql: "SELECT * FROM items WHERE parent_id = ? AND name = ?", arguments: [parentID, name])
    }
}
