import SitefsAPI
import SitefsProvider

/// How an editor's save sequence becomes one new version of the original document rather
/// than a new server file. Files created here and renames of server files wait out the
/// settle delay in the journal, which is what lets these sequences fold:
/// - temp file + rename over the original (LibreOffice, gedit, `sed -i`): the new file's
///   content becomes a new version of the original item (`adopt(_:into:)`);
/// - rename the original away, write a new file under its name, delete the renamed
///   original (vim): the same, when the renamed original is deleted
///   (`adopt(_:asSuccessorOf:undoing:)`).
extension SyncEngine {
    /// A file created here takes the place of server file `target`: its saved content (or
    /// the content it will save) becomes a new version of `target`, conditional on the
    /// version the mount had of it. Nil when the new file's upload has already started (too
    /// late to fold).
    func adopt(_ local: ProviderItem, into target: ProviderItem) throws(SyncError) -> Adoption? {
        let claimed: Uploader.Job?
        switch uploader.claim(local.identifier) {
        case .inFlight: return nil
        case .none: claimed = nil
        case .claimed(let job): claimed = job
        }
        // The edit replaces what the mount showed of `target`: based on the version behind
        // that (a save of it still queued, or an open copy, or the server's).
        let base = uploader.latestSave(of: target.identifier)?.baseVersion ?? openCopyBase(target.identifier) ?? target.version
        if let claimed {
            var job = Uploader.Job(identifier: target.identifier, name: target.name, parent: target.parent,
                                   stagedPath: claimed.stagedPath, size: claimed.size, baseVersion: base,
                                   modified: claimed.modified)
            job.contentInJournal = claimed.contentInJournal  // the row keeps its bytes
            do {
                try uploader.enqueue(job)
            } catch {
                logger.error("cannot record the save of \(target.name) in the upload journal: \(error)")
                try? uploader.enqueue(claimed)  // back as it was: still a new file
                throw .journal
            }
        }
        namespace.removeCreated(local.identifier)
        var based = target
        based.version = base
        logger.info("\(local.name) saved over \(target.name): a new version of it")
        return Adoption(former: local.identifier, item: based, shown: target)
    }

    /// vim's save: the original was renamed away (`NAME~`, not sent yet) and a new `NAME`
    /// written; now the renamed original is deleted. Instead, the rename is undone and the
    /// new file becomes a new version of the original. Nil when either is already on its
    /// way to the server (then the delete goes ahead as asked).
    func adopt(_ successor: ProviderItem, asSuccessorOf original: ProviderItem,
               undoing rename: Uploader.RenameJob) throws(SyncError) -> Adoption? {
        guard !uploader.mayBeOnServer(successor.identifier), uploader.cancelRename(of: original.identifier) else { return nil }
        var restored = original
        restored.name = rename.serverName
        restored.parent = rename.serverParent
        namespace.setMoved(original.identifier, to: nil)
        guard let adoption = try adopt(successor, into: restored) else {
            // Its upload just started: the original goes where the user put it after all.
            try? uploader.enqueueRename(rename)
            namespace.setMoved(original.identifier, to: (rename.parent, rename.name))
            return nil
        }
        return adoption
    }

    /// A file only here changes name: it will be created under the new one. When its create
    /// may have reached the server already, nothing changes (`.awaitingCreate`).
    func moveCreated(_ item: ProviderItem, to folder: ItemIdentifier, named name: String) -> NamespaceOutcome {
        var moved = item
        moved.parent = folder
        moved.name = name
        // Shown under the new name first, so a save made meanwhile already goes there.
        namespace.addCreated(moved)
        guard uploader.retarget(item.identifier, name: name, parent: folder, folders: chain(of: folder)) else {
            // Back as it was, unless its create has finished: then the server item stands
            // for it and the local one must not come back.
            namespace.removeCreated(item.identifier)
            if uploader.isRetiredCreation(item.identifier) { return .awaitingCreate(restored: nil) }
            namespace.addCreated(item)
            return .awaitingCreate(restored: item)
        }
        // A lock or temp name given a real one: from now on it is a document to upload.
        let becameDocument = LocalOnlyNames.matches(item.name) && !LocalOnlyNames.matches(name)
        return .queued(moved, becameDocument: becameDocument)
    }

    /// A server file's rename is shown at once and sent after the settle delay. Nil for an
    /// item with no folder (nothing to defer).
    func queueRename(_ item: ProviderItem, to folder: ItemIdentifier, named name: String) throws(SyncError) -> ProviderItem? {
        guard let currentParent = item.parent else { return nil }
        let pending = uploader.pendingRename(of: item.identifier)
        let rename = Uploader.RenameJob(identifier: item.identifier, name: name, parent: folder,
                                        serverName: pending?.serverName ?? item.name,
                                        serverParent: pending?.serverParent ?? currentParent)
        do {
            try uploader.enqueueRename(rename)
        } catch {
            logger.error("cannot record the rename of \(item.name) in the journal: \(error)")
            throw .journal
        }
        let back = ItemName.same(name, rename.serverName) && folder == rename.serverParent
        namespace.setMoved(item.identifier, to: back ? nil : (folder, name))
        var moved = item
        moved.parent = folder
        moved.name = name
        return moved
    }
}
