import SitefsAPI

extension DocumentStore {
    /// What a file's thumbnail is made from: its current version's blob, with what decides
    /// whether it has one (its name) and what names it (its etag).
    struct ThumbnailSource: Sendable {
        let name: String
        let etag: String
        let size: Int64
        let blob: String
        let path: String
    }

    /// The current version of a file the caller can see, for its thumbnail. Access is that of
    /// `content(of:version:for:)`: unknown ids and ungranted sites are `404 not_found`. A
    /// folder or site has no thumbnail (`404 no_thumbnail`). `version`, when given, must be
    /// the current etag (`412 version_mismatch` with the item): a thumbnail is only ever
    /// made of the current version, so a client never files an old picture under a new one.
    func thumbnailSource(of id: String, version: String?, for caller: Caller) async throws -> ThumbnailSource {
        try await metadata.read { db in
            let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds)
            guard file.row.kind == .file else { throw APIError.noThumbnail }
            if let version, version != file.row.etag { throw APIError.preconditionFailed(current: file.item) }
            guard let blob = file.row.blob else { throw StoreFailure("file \(file.row.id) has no content") }
            return ThumbnailSource(name: file.row.name, etag: file.row.etag, size: file.row.size, blob: blob,
                                   path: blobs.path(of: blob))
        }
    }
}

extension APIError {
    /// 404: this item has no thumbnail (a folder, a type without one, or content it cannot
    /// be made from).
    static let noThumbnail = APIError(.notFound, code: "no_thumbnail", "this item has no thumbnail")
}
