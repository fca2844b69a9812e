import SitefsAPI
import SitefsProvider
import SitefsStore
import SystemPackage

/// How an editor's save sequence becomes one new version of the original document rather
/// than a new server file (see the Namespace extension for the sequences).
extension SitefsFilesystem {
    /// A file created here takes the place of server file `target`: its saved content (or
    /// the content it will save) becomes a new version of `target`, conditional on the
    /// version the mount had of it; its inode and open handles now stand for `target`.
    /// False when the new file's upload has already started (too late to fold).
    func adopt(_ local: ProviderItem, into target: ProviderItem) throws(Errno) -> Bool {
        let claimed: Uploader.Job?
        switch uploader.claim(local.identifier) {
        case .inFlight: return false
        case .none: claimed = nil
        case .claimed(let job): claimed = job
        }
        // The edit replaces what the mount showed of `target`: based on the version behind
        // that (a save of it still queued, or an open copy, or the server's).
        let base = uploader.latestSave(of: target.identifier)?.baseVersion
            ?? copies.withLock({ $0[target.identifier] }).map { copy in
                copy.condition.lock()
                defer { copy.condition.unlock() }
                return copy.baseVersion
            } ?? target.version
        if let claimed {
            let job = Uploader.Job(identifier: target.identifier, name: target.name, parent: target.parent,
                                   stagedPath: claimed.stagedPath, size: claimed.size, baseVersion: base,
                                   modified: claimed.modified)
            do {
                try uploader.enqueue(job)
            } catch {
                logger.error("cannot record the save of \(target.name) in the upload journal: \(error)")
                try? uploader.enqueue(claimed)  // back as it was: still a new file
                throw .ioError
            }
        }
        if let inode = inodes.existingInode(for: local.identifier) { inodes.rebind(inode, to: target.identifier) }
        var based = target
        based.version = base ?? target.version
        rekeyCopy(from: local.identifier, to: based)
        cache.upsert(target)
        namespace.removeCreated(local.identifier)
        cache.remove(local.identifier)
        logger.info("\(local.name) saved over \(target.name): a new version of it")
        return true
    }

    /// vim's save: the original was renamed away (`NAME~`, not sent yet) and a new `NAME`
    /// written; now the renamed original is deleted. Instead, the rename is undone and the
    /// new file becomes a new version of the original. False when either is already on its
    /// way to the server (then the delete goes ahead as asked).
    func adoptAsSuccessor(_ successor: ProviderItem, of original: ProviderItem, undoing rename: Uploader.RenameJob) throws(Errno) -> Bool {
        guard !uploader.mayBeOnServer(successor.identifier), uploader.cancelRename(of: original.identifier) else { return false }
        var restored = original
        restored.name = rename.serverName
        restored.parent = rename.serverParent
        namespace.setMoved(original.identifier, to: nil)
        guard try adopt(successor, into: restored) else {
            // Its upload just started: the original goes where the user put it after all.
            try? uploader.enqueueRename(rename)
            namespace.setMoved(original.identifier, to: (rename.parent, rename.name))
            return false
        }
        return true
    }

    /// The uploader applied (or gave up) a deferred rename.
    func renameFinished(_ outcome: Uploader.RenameOutcome) {
        switch outcome {
        case .renamed(let rename, let item):
            if uploader.pendingRename(of: rename.identifier) == nil { namespace.setMoved(rename.identifier, to: nil) }
            cache.upsert(namespace.view(item))
            if !ItemName.same(item.name, rename.name) { invalidateEntry(in: rename.parent, named: rename.name) }
        case .dropped(let rename, let error):
            if uploader.pendingRename(of: rename.identifier) == nil { namespace.setMoved(rename.identifier, to: nil) }
            // The server keeps it where it was: what we showed is no longer true.
            if case .notFound = error { cache.remove(rename.identifier) }
            cache.forgetListing(of: rename.parent)
            cache.forgetListing(of: rename.serverParent)
            invalidateEntry(in: rename.parent, named: rename.name)
        }
    }

    /// Tells the kernel to forget a name it may have cached.
    func invalidateEntry(in folder: ItemIdentifier?, named name: String) {
        guard let folder, let parent = inodes.existingInode(for: folder),
              let invalidator = invalidator.withLock({ $0 }) else { return }
        invalidator.invalidateEntry(parent: parent, name: FileName(name))
    }
}
