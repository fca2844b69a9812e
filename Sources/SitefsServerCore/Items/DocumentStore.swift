import Foundation
import SitefsAPI

/// Sites, folders, files and their versions: the server's document tree.
///
/// Every mutation runs in one write transaction of the metadata database (they are
/// serialised on both engines, which is what makes conditional updates atomic) and appends to the change feed in the same
/// transaction. File bodies are streamed into the blob store *before* the transaction and
/// dropped again if it fails, so no lock is held while bytes travel over the network.
public struct DocumentStore: Sendable {
    let metadata: MetadataStore
    let blobs: BlobStore
    let maximumUploadBytes: Int64
    /// Seals paging cursors (see `CursorCodec`).
    let cursors: CursorCodec
    /// Turns row ids into API ids and back (see `ItemIDCodec`).
    let ids: ItemIDCodec
    /// The wall clock locks are stamped, expired and swept by (`ServerConfiguration.now`;
    /// tests move one by hand).
    let clock: @Sendable () -> Timestamp

    init(metadata: MetadataStore, blobs: BlobStore, maximumUploadBytes: Int64,
         clock: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) throws {
        self.metadata = metadata
        self.blobs = blobs
        self.maximumUploadBytes = maximumUploadBytes
        self.clock = clock
        cursors = try CursorCodec.load(from: metadata)
        ids = try ItemIDCodec.load(from: metadata)
    }

    /// Page sizes: default and ceiling for `limit`.
    public static let defaultPageSize = 200
    public static let maximumPageSize = 1000
}

/// Helpers shared by the mutating operations. All run inside a write transaction.
enum Mutation {
    /// Appends to the change feed; the returned sequence number is also used as a list
    /// position for items entering a folder.
    @discardableResult
    static func recordChange(_ db: any SQLTransaction, site: Int64, item: Int64, deleted: Bool = false) throws -> Int64 {
        guard let seq = try db.int(
            sql: "INSERT INTO changes (site_id, item_id, deleted) VALUES (?, ?, ?) RETURNING seq",
            arguments: [site, item, deleted])
        else { throw StoreFailure("the change feed gave no sequence number") }
        db.changed(site: site)
        return seq
    }

    /// Records the change and gives the item the end position of its (new) folder.
    static func recordEntry(_ db: any SQLTransaction, site: Int64, item: Int64) throws {
        let seq = try recordChange(db, site: site, item: item)
        try db.execute(sql: "UPDATE items SET list_seq = ? WHERE id = ?", arguments: [seq, item])
    }

    /// Of `blobs` (named by versions a write is removing), those no version names any more
    /// once the write's deletions are made, each once: what may be deleted after the commit.
    /// A blob can be shared: a restore's new version names the restored version's blob, and
    /// a file replaced by a rename takes the moved file's. Asked in batches of
    /// `BlobCollector.batch` names.
    static func unreferenced(_ blobs: [String], in db: any SQLTransaction) throws -> [String] {
        var seen = Set<String>()
        let unique = blobs.filter { seen.insert($0).inserted }
        var result: [String] = []
        var start = 0
        while start < unique.count {
            let batch = Array(unique[start..<min(start + BlobCollector.batch, unique.count)])
            start += batch.count
            let placeholders = Array(repeating: "?", count: batch.count).joined(separator: ", ")
            let referenced = Set(try db.texts(sql: "SELECT DISTINCT blob FROM versions WHERE blob IN (\(placeholders))",
                                              arguments: batch))
            result += batch.filter { !referenced.contains($0) }
        }
        return result
    }

    struct NewItem {
        var siteID: Int64?
        var parentID: Int64?
        var name: String
        var kind: ItemKind
        var size: Int64 = 0
        var contentType: String? = nil
        var blob: String? = nil
        var etag: String = BlobStore.newName()
        var modifiedAt: Int64? = nil
        var symlinkTarget: String? = nil
    }

    /// Inserts an item (and its first version, for files) and records it in the feed.
    static func insert(_ new: NewItem, by caller: Caller, in db: any SQLTransaction) throws -> ItemRow {
        let now = Timestamp.now().microseconds
        if let parentID = new.parentID, try ItemRow.fetch(db, parentID: parentID, name: new.name, at: now) != nil {
            throw APIError.conflict("an item named '\(new.name)' already exists in this folder")
        }
        let folded = FoldedName(new.name)
        guard let id = try db.int(
            sql: """
                INSERT INTO items (site_id, parent_id, name, kind, size, content_type, created_at, modified_at,
                                   created_by, modified_by, etag, blob, symlink_target, name_folded, name_stem)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id
                """,
            // A link is stored as a file row with its target (see `SQLiteSchema` v4).
            arguments: [new.siteID ?? 0, new.parentID, new.name, new.kind == .symlink ? ItemKind.file.rawValue : new.kind.rawValue,
                        new.size, new.contentType, now, new.modifiedAt ?? now, caller.name, caller.name, new.etag, new.blob,
                        new.symlinkTarget, folded.folded, folded.stem])
        else { throw StoreFailure("the new item got no id") }
        let siteID = new.siteID ?? id
        if new.siteID == nil {
            try db.execute(sql: "UPDATE items SET site_id = ? WHERE id = ?", arguments: [id, id])
        }
        if let blob = new.blob {
            try db.execute(
                sql: "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [id, new.etag, new.size, blob, new.modifiedAt ?? now, caller.name])
            // A file's text is indexed in the background (`SearchIndexer`); a link has none.
            if new.kind == .file { try SearchJobs.enqueue(db, item: id, etag: new.etag, at: now) }
        }
        try recordEntry(db, site: siteID, item: id)
        // A new id: no lock can name it yet.
        guard let row = try ItemRow.fetch(db, id: id, at: now) else { throw StoreFailure("inserted item vanished") }
        return row
    }
}

/// An `If-Match` condition from a request.
public enum VersionCondition: Sendable, Equatable {
    /// `*`: the item must exist (it does, if we got this far).
    case any
    /// One of these etags must be current.
    case oneOf([String])

    func isSatisfied(by etag: String) -> Bool {
        switch self {
        case .any: return true
        case .oneOf(let tags): return tags.contains(etag)
        }
    }

    /// Throws 412 with the current item unless satisfied.
    static func check(_ condition: VersionCondition?, _ visible: VisibleItem) throws {
        if let condition, !condition.isSatisfied(by: visible.row.etag) {
            throw APIError.preconditionFailed(current: visible.item)
        }
    }
}
