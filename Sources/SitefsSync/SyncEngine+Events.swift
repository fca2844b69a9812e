import SitefsAPI
import SitefsProvider

/// What the user did on the mount, as the core tells the engine. Each call records the
/// change durably before it returns (or refuses it with `SyncError`, having logged why).
extension SyncEngine {
    /// A new file appears on the mount: it exists only here until its first save is uploaded.
    public func created(_ item: ProviderItem) { namespace.addCreated(item) }

    /// A new file that could not be opened after all (`created` undone).
    public func creationAbandoned(_ identifier: ItemIdentifier) { namespace.removeCreated(identifier) }

    /// A file was saved (its snapshot staged and fsynced): the save is journaled and queued, replacing an older save of the
    /// same file. Durable when this returns; close() must fail when it throws.
    public func saved(_ save: SaveJob) throws(SyncError) {
        do {
            try uploader.enqueue(save)
        } catch {
            logger.error("cannot record the save of \(save.name) in the upload journal: \(error)")
            throw .journal
        }
    }

    /// A modification time was set on a file: a save of it queued or being sent ends with
    /// this time (the server sets its own on upload). False when none is pending.
    public func modificationTimeSet(_ modified: Timestamp, of identifier: ItemIdentifier) -> Bool {
        uploader.applyModified(modified, to: identifier)
    }

    /// The item is gone (deleted on the server, or a new file dropped): nothing more of it is
    /// sent, and the mount stops showing it as created or moved here.
    public func deleted(_ identifier: ItemIdentifier) {
        namespace.removeCreated(identifier)
        namespace.setMoved(identifier, to: nil)
        uploader.cancel(identifier)
    }

    /// A file is being removed. A new file not sent yet is simply dropped; a server file
    /// whose renamed-away original is being deleted after a new file took its name (vim's
    /// save) becomes a new version instead; anything else is deleted on the server.
    /// `openCopyBase` answers the version an open copy of a file is based on (no lock of the
    /// engine's is held when it is asked).
    public func removing(_ item: ProviderItem, openCopyBase: (ItemIdentifier) -> String?) throws(SyncError) -> Removal {
        if item.identifier.isLocal {
            // Dropped in one step with the check, so no upload can start in between.
            return uploader.discardIfNotSent(item.identifier) ? .discarded : .awaitCreate
        }
        if let rename = uploader.pendingRename(of: item.identifier),
           let successor = namespace.created(named: rename.serverName, in: rename.serverParent),
           let adoption = try adopt(successor, asSuccessorOf: item, undoing: rename, openCopyBase: openCopyBase) {
            return .adopted(adoption)
        }
        return .deleteOnServer
    }

    /// A file or folder is being renamed to `name` in `folder` (the same site), replacing the
    /// server item `target` if given (the core resolves a new file in the way first, with
    /// `removing`). Files move at once on the mount and on the server after the settle delay;
    /// a new file renamed over a server file becomes a new version of it; the rest is made on
    /// the server at once (`.onServer`).
    public func renaming(_ source: ProviderItem, to folder: ItemIdentifier, named name: String, replacing target: ProviderItem?,
                         openCopyBase: (ItemIdentifier) -> String?) throws(SyncError) -> RenameResult {
        guard source.kind == .file else {
            // A folder made here and not on the server yet moves with its mkdir.
            return source.identifier.isLocal && target == nil ? moveMadeFolder(source, to: folder, named: name) : .onServer
        }
        if let target {
            guard target.kind == .file, source.identifier.isLocal,
                  let adoption = try adopt(source, into: target, openCopyBase: openCopyBase) else { return .onServer }
            return .adopted(adoption)
        }
        if source.identifier.isLocal { return moveCreated(source, to: folder, named: name) }
        guard let moved = try queueRename(source, to: folder, named: name) else { return .onServer }
        return .moved(moved, becameDocument: false)
    }

    /// A change the core makes on the server at once (a delete, a folder's rename, a file
    /// renamed over a server file): made only after the renames queued before it reached the
    /// server, so the server sees changes in the order they were made. `deleting` names the
    /// item a delete removes: where saves or a rename of it are journaled, the delete is
    /// journaled first (a restart must not bring it back), and meanwhile a 404 for one of its
    /// saves is this delete's, not a reason to create the file again.
    public func changingOnServer<T>(_ operation: @autoclosure () -> String, deleting: ItemIdentifier? = nil,
                                    _ change: () throws(ProviderError) -> T) throws(SyncError) -> T {
        guard uploader.flushRenames(timeout: renamesWait) else {
            logger.error("\(operation()): renames made before it could not be sent to the server; try again when it is reachable")
            throw .renamesPending
        }
        if let deleting {
            do {
                try uploader.beginDelete(deleting)
            } catch {
                logger.error("\(operation()): cannot record the delete in the upload journal: \(error)")
                throw .journal
            }
        }
        defer { if let deleting { uploader.endDelete(deleting) } }
        do throws(ProviderError) {
            return try change()
        } catch {
            throw .server(error)
        }
    }
}
