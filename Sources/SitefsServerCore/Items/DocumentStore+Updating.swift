import Hummingbird
import SitefsAPI

extension DocumentStore {
    /// Stores a new version of a file from a streamed body, if `condition` still holds when
    /// the body has arrived. Of several uploads based on the same version exactly one wins;
    /// the others get 412 with the item as it then is. A file locked for editing takes it
    /// only with its lock's token among `locks` (else 423), checked in the same transaction.
    public func replaceContent<Body: AsyncSequence>(
        of id: String, body: Body, condition: VersionCondition?, by caller: Caller, modifiedAt: Timestamp? = nil,
        locks: LockTokens = .none
    ) async throws -> Item where Body.Element == ByteBuffer {
        // Fail before reading the body when the answer is already known.
        _ = try await metadata.read { db in try writableFile(id, condition: condition, locks: locks, for: caller, in: db) }
        let blob = try await blobs.store(body, limit: maximumUploadBytes)
        do {
            return try await metadata.write { db in
                let file = try writableFile(id, condition: condition, locks: locks, for: caller, in: db)
                // The client's modification time when it sent one (so a file keeps the mtime
                // its program gave it), else the server's.
                let now = modifiedAt?.microseconds ?? Timestamp.now().microseconds
                try db.execute(
                    sql: "UPDATE items SET size = ?, etag = ?, blob = ?, modified_at = ?, modified_by = ? WHERE id = ?",
                    arguments: [blob.size, blob.name, blob.name, now, caller.name, file.row.id])
                try db.execute(
                    sql: "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [file.row.id, blob.name, blob.size, blob.name, now, caller.name])
                try SearchJobs.enqueue(db, item: file.row.id, etag: blob.name, at: Timestamp.now().microseconds)
                try Mutation.recordChange(db, site: file.row.siteID, item: file.row.id)
                return try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds).item
            }
        } catch {
            blobs.remove([blob.name])
            throw error
        }
    }

    /// Renames, moves within the site, sets the modification time or the mode, or replaces an existing
    /// file at the destination (`replace`: the *destination's* id survives and gains the
    /// moved file's content as its newest version, so a document saved by "write a temp file
    /// and rename it over the original" keeps its id and history).
    ///
    /// A lock for editing on the item, or on the file a `replace` would replace, lets the
    /// change through only with its token among `locks` (else 423); a mode alone is no edit
    /// of the document and needs none (the lock keeps others from changing its content,
    /// name and place).
    public func update(_ id: String, with patch: ItemPatch, condition: VersionCondition?, by caller: Caller,
                       locks: LockTokens = .none) async throws -> Item {
        if let name = patch.name { try validate(name) }
        if let mode = patch.mode, !ItemMode.range.contains(mode) {
            throw APIError.badRequest("mode is permission bits, 0 to 4095 (0o7777)", code: "invalid_mode")
        }
        guard patch.name != nil || patch.parentID != nil || patch.modifiedAt != nil || patch.mode != nil else {
            throw APIError.badRequest("nothing to change: give name, parent_id, modified_at or mode", code: "empty_patch")
        }
        let onlyMode = patch.name == nil && patch.parentID == nil && patch.modifiedAt == nil
        let (item, orphanedBlobs) = try await metadata.write { db -> (Item, [String]) in
            let now = clock().microseconds
            let source = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now)
            guard source.row.kind != .site else { throw APIError.forbidden("sites are renamed by the administrator") }
            try source.requireWritable()
            // The request is checked before the condition: a move to a folder that does not
            // exist is a 404 whatever the version.
            let destination = try patch.parentID.map { try destinationFolder($0, moving: source, for: caller, in: db) }
                ?? source.row.parentID!
            try VersionCondition.check(condition, source)
            if !onlyMode { try locks.requireOpen(source.row) }

            let name = patch.name ?? source.row.name
            let moved = destination != source.row.parentID
            if moved || !ItemName.same(name, source.row.name),
               let occupant = try ItemRow.fetch(db, parentID: destination, name: name, at: now), occupant.id != source.row.id {
                guard patch.replace == true else {
                    throw APIError.conflict("an item named '\(name)' already exists in the destination folder")
                }
                if let lock = occupant.lock, !locks.opens(lock) { throw APIError.locked(lock.api, what: occupant.name) }
                return try replace(occupant, with: source, modifiedAt: patch.modifiedAt, mode: patch.mode, by: caller,
                                   in: db, at: now)
            }
            // A rename changes what search matches the name with, never the indexed text.
            let folded = FoldedName(name)
            try db.execute(
                sql: "UPDATE items SET name = ?, name_folded = ?, name_stem = ?, parent_id = ?, modified_at = ?, mode = ?, etag = ? WHERE id = ?",
                arguments: [name, folded.folded, folded.stem, destination, patch.modifiedAt?.microseconds ?? source.row.modifiedAt,
                            patch.mode.map { Int64($0) } ?? source.row.mode,
                            // A folder's etag tracks its own metadata; a file's only its content, so
                            // an upload based on a version survives a rename of the file.
                            source.row.kind == .folder && (moved || !ItemName.same(name, source.row.name)) ? BlobStore.newName() : source.row.etag,
                            source.row.id])
            if moved {
                try Mutation.recordEntry(db, site: source.row.siteID, item: source.row.id)
            } else {
                try Mutation.recordChange(db, site: source.row.siteID, item: source.row.id)
            }
            return (try VisibleItem.find(id, ids: ids, for: caller, in: db, at: now).item, [])
        }
        blobs.remove(orphanedBlobs)
        return item
    }

    /// The folder an item may be moved into: visible, writable, in the same site, and not
    /// the item itself or inside it.
    private func destinationFolder(_ id: String, moving source: VisibleItem, for caller: Caller, in db: any SQLTransaction) throws -> Int64 {
        let folder = try writableContainer(id, for: caller, in: db)
        guard folder.row.siteID == source.row.siteID else {
            throw APIError.badRequest("items move only within their site; copy them to another site", code: "cross_site")
        }
        var ancestor: Int64? = folder.row.id
        while let current = ancestor {
            if current == source.row.id {
                throw APIError.badRequest("a folder cannot be moved into itself", code: "invalid_move")
            }
            ancestor = try db.int(sql: "SELECT parent_id FROM items WHERE id = ?", arguments: [current])
        }
        return folder.row.id
    }

    /// Rename-over: `target` takes `source`'s current content as a new version; `source`
    /// goes away. Returns the surviving item and blobs no longer referenced.
    private func replace(
        _ target: ItemRow, with source: VisibleItem, modifiedAt: Timestamp?, mode: Int?, by caller: Caller,
        in db: any SQLTransaction, at now: Int64
    ) throws -> (Item, [String]) {
        guard source.row.kind == .file, target.kind == .file, let blob = source.row.blob else {
            throw APIError.conflict("only a file can replace a file", code: "not_replaceable")
        }
        let when = modifiedAt?.microseconds ?? source.row.modifiedAt
        // The moved file's mode comes with its content (what a program renaming a temp file
        // over the original set on it).
        try db.execute(
            sql: "UPDATE items SET size = ?, etag = ?, blob = ?, modified_at = ?, modified_by = ?, mode = ? WHERE id = ?",
            arguments: [source.row.size, source.row.etag, blob, when, caller.name,
                        mode.map { Int64($0) } ?? source.row.mode ?? target.mode, target.id])
        try db.execute(
            sql: "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [target.id, source.row.etag, source.row.size, blob, when, caller.name])
        // The survivor has new content: its text is queued; the source's index rows go with it.
        try SearchJobs.enqueue(db, item: target.id, etag: source.row.etag, at: now)
        let candidates = try db.texts(sql: "SELECT blob FROM versions WHERE item_id = ? AND blob != ?", arguments: [source.row.id, blob])
        try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [source.row.id])
        let orphans = try Mutation.unreferenced(candidates, in: db)
        try Mutation.recordChange(db, site: source.row.siteID, item: source.row.id, deleted: true)
        try Mutation.recordChange(db, site: target.siteID, item: target.id)
        guard let survivor = try ItemRow.fetch(db, id: target.id, at: now) else { throw StoreFailure("replaced item vanished") }
        return (survivor.item(access: source.access, ids: ids), orphans)
    }

    /// A file the caller may write now: visible, writable, at the version `condition`
    /// names, and not locked by someone whose token `locks` lacks.
    func writableFile(_ id: String, condition: VersionCondition?, locks: LockTokens, for caller: Caller,
                      in db: any SQLTransaction) throws -> VisibleItem {
        let file = try VisibleItem.find(id, ids: ids, for: caller, in: db, at: clock().microseconds)
        guard file.row.kind == .file else { throw APIError.badRequest("'\(file.row.name)' is a folder", code: "not_a_file") }
        try file.requireWritable()
        try VersionCondition.check(condition, file)
        try locks.requireOpen(file.row)
        return file
    }
}
