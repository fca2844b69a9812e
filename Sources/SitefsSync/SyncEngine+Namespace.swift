import SitefsAPI
import SitefsProvider

/// Namespace changes: mkdir, unlink, rmdir, rename and new files, each decided here, once,
/// by the rule written at `SyncEngine` ("Now or later"). What the server cannot take now
/// (it is unreachable, or the change is inside a folder made here that it does not have
/// yet) is recorded durably, shown at once as the user left it, and sent in the order made
/// once it can be (`NamespaceOperation`, deferred renames).
extension SyncEngine {
    /// Carries out a namespace change and says what it came to. Durable when this returns;
    /// refused with `SyncError` (logged) otherwise. May wait for the server (a change made at
    /// once, and the renames queued before it), never with a lock of the engine's held.
    public func apply(_ change: NamespaceChange) throws(SyncError) -> NamespaceOutcome {
        switch change {
        case .createFile(let item):
            namespace.addCreated(item)
            return .queued(item)
        case .makeFolder(let name, let parent):
            return try makeFolder(named: name, in: parent)
        case .remove(let item):
            return try remove(item)
        case .rename(let source, let folder, let name, let target):
            return try rename(source, to: folder, named: name, replacing: target)
        case .setMode(let item, let mode):
            return try setMode(of: item, to: mode)
        case .makeSymlink(let name, let parent, let target):
            return try makeSymlink(named: name, in: parent, target: target)
        }
    }

    /// The now-or-later rule: the server takes a change now unless the connection monitor
    /// knows it to be unreachable, or the change goes into a folder made here whose mkdir is
    /// still queued, or the operations queued before it (deletes) cannot be sent first within
    /// `renamesWait`: `rm -r build && mkdir build` must not find the old folder there.
    func sendsNow(into folder: ItemIdentifier?) -> Bool {
        monitor?.offlineSince == nil && folder?.isLocal != true && uploader.flushOperations(timeout: renamesWait)
    }

    // MARK: mkdir

    private func makeFolder(named name: String, in parent: ItemIdentifier) throws(SyncError) -> NamespaceOutcome {
        if sendsNow(into: parent) {
            do throws(ProviderError) {
                return .sent(try backend.createFolder(named: name, in: parent))
            } catch where error.isUnreachable {
                // Lost in transit: made later (should the server have made it, the replay joins
                // it, and meanwhile the local folder hides the server's of the same name).
            } catch {
                throw .server(error)
            }
        }
        let now = Timestamp.now()
        let folder = ProviderItem(identifier: .local(in: parent.site), parent: parent, name: name, kind: .folder, size: 0,
                                  created: now, modified: now, createdBy: userName, modifiedBy: userName, version: "",
                                  capabilities: ProviderItem.localFolderCapabilities)
        namespace.addCreated(folder)
        do {
            try uploader.enqueueOperation(NamespaceOperation(kind: .makeFolder, identifier: folder.identifier, name: name,
                                                             parent: parent, folders: chain(of: parent)))
        } catch {
            namespace.removeCreated(folder.identifier)
            logger.error("cannot record mkdir \(name) in the journal: \(error)")
            throw .journal
        }
        logger.info("mkdir \(name): made here, sent to the server when it can take it")
        return .queued(folder)
    }

    // MARK: unlink, rmdir

    /// A new file not sent yet is simply dropped, a folder made here whose mkdir has not gone
    /// too; a server file whose renamed-away original is being removed after a new file took
    /// its name (vim's save) becomes a new version instead; anything else is deleted on the
    /// server, now or later.
    private func remove(_ item: ProviderItem) throws(SyncError) -> NamespaceOutcome {
        if item.identifier.isLocal {
            if item.kind == .file {
                // Dropped in one step with the check, so no upload can start in between.
                return uploader.discardIfNotSent(item.identifier) ? .discarded : .awaitingCreate(restored: nil)
            }
            guard uploader.dropMakeFolder(item.identifier) else { return .awaitingCreate(restored: nil) }
            namespace.removeCreated(item.identifier)
            return .discarded
        }
        if item.kind == .file, let rename = uploader.pendingRename(of: item.identifier),
           let successor = namespace.created(named: rename.serverName, in: rename.serverParent),
           let adoption = try adopt(successor, asSuccessorOf: item, undoing: rename) {
            return .adopted(adoption)
        }
        return try delete(item)
    }

    /// Deletes a server item: recorded, hidden at once and sent by the workers in the order
    /// made (after the renames queued before it: a file moved out of a folder must leave it
    /// on the server before the folder goes), so `rm -r` never waits for the server one file
    /// at a time. Deletes of files follow each other on several connections at once
    /// (`OperationQueue`). A file is deleted only if it is still the version the mount
    /// showed: someone's newer edit is not removed behind their back (it comes back here).
    private func delete(_ item: ProviderItem) throws(SyncError) -> NamespaceOutcome {
        guard item.capabilities.contains(.delete) else { throw .notPermitted }
        let isFile = !item.kind.isContainer  // a link goes as a file does: if still the version seen
        let operation = NamespaceOperation(kind: isFile ? .deleteFile : .removeFolder, identifier: item.identifier, name: item.name,
                                           parent: item.parent, baseVersion: isFile ? item.version : nil)
        // Hidden first: a listing fetched meanwhile must not bring it back. It stays hidden
        // from every listing and report until the operation is settled; one the server does
        // not take (changed or filled meanwhile) comes back as `SyncEvent.restored`.
        namespace.hide(item.identifier)
        do {
            try uploader.enqueueOperation(operation)
        } catch {
            namespace.unhide(item.identifier)
            logger.error("cannot record the delete of \(item.name) in the journal: \(error)")
            throw .journal
        }
        logger.info("delete \(item.name): removed here, queued for the server")
        return .queued(nil)
    }

    // MARK: rename

    /// Files move at once on the mount and on the server after the settle delay; a new file
    /// renamed over a server file becomes a new version of it; a folder made here moves with
    /// its mkdir; the rest (a server folder, a server file over another) is made on the
    /// server now or later.
    private func rename(_ source: ProviderItem, to folder: ItemIdentifier, named name: String,
                        replacing target: ProviderItem?) throws(SyncError) -> NamespaceOutcome {
        if source.kind != .file {
            if source.identifier.isLocal, target == nil { return moveMadeFolder(source, to: folder, named: name) }
            return try renameNowOrLater(source, to: folder, named: name, replacing: target)
        }
        if let target {
            if target.kind == .file, source.identifier.isLocal, let adoption = try adopt(source, into: target) {
                return .adopted(adoption)
            }
            return try renameNowOrLater(source, to: folder, named: name, replacing: target)
        }
        if source.identifier.isLocal { return moveCreated(source, to: folder, named: name) }
        guard let moved = try queueRename(source, to: folder, named: name) else {
            return try renameNowOrLater(source, to: folder, named: name, replacing: nil)
        }
        return .queued(moved)
    }

    /// A rename made on the server at once, or, when it cannot take it now, shown at once and
    /// sent with the renames, after the operations made before it. Queued over a server file,
    /// it is a delete of that file (queued first) and the rename: the replaced document's
    /// history is not carried over to the new content then.
    private func renameNowOrLater(_ source: ProviderItem, to folder: ItemIdentifier, named name: String,
                                  replacing target: ProviderItem?) throws(SyncError) -> NamespaceOutcome {
        if sendsNow(into: folder) {
            var current = source
            if source.kind == .file {
                // The content being renamed must be on the server first: a save queued for the
                // source would otherwise land on an item the rename just replaced.
                let hadPending = !uploader.state(of: source.identifier).isIdle
                guard uploader.waitUntilIdle(source.identifier, timeout: uploadWait) else {
                    logger.warning("rename \(source.name): its upload is still pending")
                    throw .uploadPending
                }
                if hadPending {
                    do throws(ProviderError) {
                        current = namespace.view(try backend.item(source.identifier))  // its upload changed it
                    } catch {
                        throw .server(error)
                    }
                }
            }
            let changes = ItemChanges(name: ItemName.same(name, current.name) ? nil : name,
                                      parent: folder == current.parent ? nil : folder,
                                      replaceExisting: target?.kind == .file)
            do throws(SyncError) {
                let renamed = try changeOnServer("rename \(source.name)") { () throws(ProviderError) in
                    try backend.update(current.identifier, changes, baseVersion: nil)
                }
                return .sent(renamed)
            } catch {
                // Lost in transit: renamed later (a replay of a rename that was applied changes
                // nothing). Over a file it is not: the replaced file may be gone already.
                guard case .server(let failure) = error, failure.isUnreachable, target == nil else { throw error }
            }
        }
        if let target { _ = try delete(target) }
        guard let moved = try queueRename(source, to: folder, named: name) else { throw .notPermitted }  // a site
        logger.info("rename \(source.name) to \(name): shown here, on the server when it can take it")
        return .queued(moved)
    }

    /// A folder made here renamed or moved before its mkdir went: it is made there instead.
    /// `.awaitingCreate` when the mkdir has gone: rename what it made.
    private func moveMadeFolder(_ folder: ProviderItem, to parent: ItemIdentifier, named name: String) -> NamespaceOutcome {
        guard uploader.retargetMakeFolder(folder.identifier, name: name, parent: parent, folders: chain(of: parent)) else {
            return .awaitingCreate(restored: namespace.created(folder.identifier))
        }
        var moved = folder
        moved.parent = parent
        moved.name = name
        namespace.addCreated(moved)
        return .queued(moved)
    }

    /// Turns an operation's outcome into an event, with the namespace brought up to date first.
    func report(_ outcome: Uploader.OperationOutcome) -> SyncEvent? {
        let operation = outcome.operation
        switch outcome {
        case .madeFolder(_, let folder):
            // What was made or moved into it here is shown in the server folder from now on,
            // before the core hears that the local one is gone.
            namespace.reparent(from: operation.identifier, to: folder.identifier)
            namespace.removeCreated(operation.identifier)
            return .replaced(operation.identifier, by: namespace.view(folder))
        case .madeLink(_, let link):
            namespace.removeCreated(operation.identifier)
            return .replaced(operation.identifier, by: namespace.view(link))
        case .modeSet:
            // The server has it; the mount showed it already. A later chmod of the same item
            // still queued keeps its own overlay.
            if !uploader.hasPendingMode(for: operation.identifier) { namespace.setMode(operation.identifier, to: nil) }
            return nil
        case .deleted:
            return .removed(operation.identifier)  // unhidden once delivered (`EventRelay`)
        case .kept, .failed:
            guard !operation.kind.makesItem else { return .failed(operation.identifier) }  // stays shown here
            if operation.kind == .setMode {
                // Listed under "not applied" in `sitefs status`; the server's mode shows again.
                if !uploader.hasPendingMode(for: operation.identifier) { namespace.setMode(operation.identifier, to: nil) }
                return nil
            }
            namespace.unhide(operation.identifier)
            return .restored(operation.identifier, parent: operation.parent, name: operation.name)
        }
    }
}
