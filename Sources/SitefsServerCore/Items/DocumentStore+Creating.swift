import Hummingbird
import SitefsAPI

extension DocumentStore {
    /// Creates an empty folder in a site or folder.
    public func createFolder(named name: String, in parentID: String, by caller: Caller) async throws -> Item {
        try validate(name)
        return try await metadata.write { db in
            let parent = try writableContainer(parentID, for: caller, in: db)
            let row = try Mutation.insert(
                .init(siteID: parent.row.siteID, parentID: parent.row.id, name: name, kind: .folder), by: caller, in: db)
            return row.item(access: parent.access, ids: ids)
        }
    }

    /// Creates a symbolic link to `target` (1 to 4095 bytes of UTF-8, no NUL; kept exactly,
    /// never followed). Its content, a blob like a file's, is the target, so a client that
    /// lists links without targets reads them as it reads files.
    public func createSymlink(named name: String, in parentID: String, target: String, by caller: Caller) async throws -> Item {
        try validate(name)
        guard ItemMode.isValidTarget(target) else {
            throw APIError.badRequest("a link's target is 1 to \(ItemMode.maximumSymlinkTarget) bytes with no NUL",
                                      code: "invalid_target")
        }
        let blob = try blobs.store(bytes: Array(target.utf8))
        do {
            return try await metadata.write { db in
                let parent = try writableContainer(parentID, for: caller, in: db)
                return try Mutation.insert(
                    .init(siteID: parent.row.siteID, parentID: parent.row.id, name: name, kind: .symlink, size: blob.size,
                          blob: blob.name, etag: blob.name, symlinkTarget: target),
                    by: caller, in: db
                ).item(access: parent.access, ids: ids)
            }
        } catch {
            blobs.remove([blob.name])
            throw error
        }
    }

    /// Creates a file from a streamed body. The name is checked before any byte is read so
    /// a doomed upload fails at once; the body then goes to disk, and the item appears in
    /// one transaction once all of it is there.
    public func createFile<Body: AsyncSequence>(
        named name: String, in parentID: String, body: Body, by caller: Caller, modifiedAt: Timestamp? = nil
    ) async throws -> Item where Body.Element == ByteBuffer {
        try validate(name)
        try await metadata.read { db in
            let parent = try writableContainer(parentID, for: caller, in: db)
            if try ItemRow.fetch(db, parentID: parent.row.id, name: name, at: clock().microseconds) != nil {
                throw APIError.conflict("an item named '\(name)' already exists in this folder")
            }
        }
        let blob = try await blobs.store(body, limit: maximumUploadBytes)
        do {
            return try await metadata.write { db in
                let parent = try writableContainer(parentID, for: caller, in: db)
                let row = try Mutation.insert(
                    .init(siteID: parent.row.siteID, parentID: parent.row.id, name: name, kind: .file, size: blob.size,
                          contentType: ContentTypes.forName(name), blob: blob.name, etag: blob.name,
                          modifiedAt: modifiedAt?.microseconds),
                    by: caller, in: db)
                return row.item(access: parent.access, ids: ids)
            }
        } catch {
            blobs.remove([blob.name])
            throw error
        }
    }

    /// Creates a file from bytes in memory, for the administrator's seeding and import.
    func createFile(named name: String, in parentID: String, bytes: [UInt8], by caller: Caller) async throws -> Item {
        try validate(name)
        let blob = try blobs.store(bytes: bytes)
        return try await insertFile(named: name, in: parentID, blob: blob, by: caller)
    }

    /// Creates a file as a copy of a local file, for folder import.
    func createFile(named name: String, in parentID: String, copying file: URLPath, by caller: Caller) async throws -> Item {
        try validate(name)
        let blob = try blobs.store(copyOf: file.url)
        return try await insertFile(named: name, in: parentID, blob: blob, by: caller)
    }

    private func insertFile(named name: String, in parentID: String, blob: (name: String, size: Int64), by caller: Caller) async throws -> Item {
        do {
            return try await metadata.write { db in
                let parent = try writableContainer(parentID, for: caller, in: db)
                return try Mutation.insert(
                    .init(siteID: parent.row.siteID, parentID: parent.row.id, name: name, kind: .file, size: blob.size,
                          contentType: ContentTypes.forName(name), blob: blob.name, etag: blob.name),
                    by: caller, in: db
                ).item(access: parent.access, ids: ids)
            }
        } catch {
            blobs.remove([blob.name])
            throw error
        }
    }

    /// Creates a site (administrator only; users are granted sites, they do not make them).
    public func createSite(named name: String, by caller: Caller) async throws -> Item {
        try validate(name)
        return try await metadata.write { db in
            if try db.int(sql: "SELECT id FROM items WHERE parent_id IS NULL AND name = ?", arguments: [name]) != nil {
                throw APIError.conflict("a site named '\(name)' already exists")
            }
            return try Mutation.insert(.init(siteID: nil, parentID: nil, name: name, kind: .site), by: caller, in: db)
                .item(access: .readWrite, ids: ids)
        }
    }

    /// The site with this name, if any.
    public func site(named name: String) async throws -> Item? {
        try await metadata.read { db in
            try ItemRow.fetchOne(db, where: "items.parent_id IS NULL AND items.name = ?", arguments: [name], at: clock().microseconds)?
                .item(access: .readWrite, ids: ids)
        }
    }

    func validate(_ name: String) throws {
        if let violation = ItemName.violation(of: name) { throw APIError.invalidName(violation) }
    }

    func writableContainer(_ id: String, for caller: Caller, in db: any SQLTransaction) throws -> VisibleItem {
        let parent = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds)
        guard parent.row.isContainer else {
            throw APIError.badRequest("'\(parent.row.name)' is a file, not a folder", code: "not_a_folder")
        }
        try parent.requireWritable()
        return parent
    }
}

/// A local file path (import), kept apart from API strings.
struct URLPath: Sendable {
    let url: Foundation.URL
}

import Foundation
