import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

/// mkdir, unlink, rmdir and rename.
///
/// Files created here and renames of server files are local first: the sync engine shows
/// them at once and sends them after the settle delay, which is what lets an editor's save
/// sequence fold into one new version of the original document (SyncEngine+EditorSaves).
/// The core resolves names and kinds, asks the engine what a removal or rename comes to,
/// and applies the answer to its own tables: inodes, open copies, the item cache. Changes
/// made on the server at once (mkdir, rmdir, deleting a server file, renaming a folder,
/// renaming over a server file) go through `SyncEngine.changingOnServer`, after the renames
/// queued before them, so the server sees changes in the order they were made. While the
/// server is unreachable (or for what goes into a folder made offline) they are queued
/// instead (`SyncEngine+Offline`) and shown at once.
extension SitefsFilesystem {
    public func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry {
        let folder = try writableFolder(parent)
        let folderName = try serverName(name)
        if let violation = ItemName.violation(of: folderName) {
            logger.warning("mkdir \(folderName.debugDescription): the server would refuse this name (\(violation))")
            throw .invalidArgument
        }
        if try listing(of: folder.identifier).identifier(named: folderName) != nil { throw .fileExists }
        // Offline, or in a folder made offline that the server does not have yet: made here
        // now, on the server when it can be.
        if isOffline || folder.identifier.isLocal { return try makeDirectoryLater(named: folderName, in: folder) }
        let item: ProviderItem
        do {
            item = try backend.createFolder(named: folderName, in: folder.identifier)
        } catch {
            // Lost in transit: made later (should the server have made it, the replay joins
            // it, and meanwhile the local folder hides the server's of the same name).
            if error.isUnreachable { return try makeDirectoryLater(named: folderName, in: folder) }
            namespaceCallFailed(error, in: folder.identifier)
            throw handle(error, "mkdir \(folderName)")
        }
        cache.upsert(item)
        cache.storeListing(ItemCache.Listing(names: [], identifiers: []), of: item.identifier)
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return entry
    }

    /// The server is known to be unreachable (see `ConnectionMonitor`): changes of the tree
    /// are queued instead of tried.
    var isOffline: Bool { backend.monitor.offlineSince != nil }

    /// mkdir queued (see `SyncEngine.madeFolder`): a local folder, shown at once.
    private func makeDirectoryLater(named name: String, in folder: ProviderItem) throws(Errno) -> Entry {
        let now = Timestamp.now()
        let item = ProviderItem(identifier: .local(in: folder.identifier.site), parent: folder.identifier, name: name,
                                kind: .folder, size: 0, created: now, modified: now, createdBy: userName, modifiedBy: userName,
                                version: "", capabilities: ProviderItem.localFolderCapabilities)
        do throws(SyncError) {
            try sync.madeFolder(item)
        } catch {
            throw errorNumber(for: error, "mkdir \(name)")
        }
        logger.info("mkdir \(name): made here, sent to the server when it can take it")
        cache.upsert(item)
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return entry
    }

    public func unlink(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        let folder = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .file else { throw .isDirectory }
        try remove(item, in: folder, parent: parent)
    }

    public func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        let folder = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .folder else { throw item.kind == .site ? .permissionDenied : .notDirectory }
        guard try listing(of: item.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
        try removeFolder(item, in: folder, parent: parent)
    }

    /// Removes an empty folder: one made here and not sent yet simply goes; one whose mkdir
    /// has gone is removed on the server once that is done; a server folder is removed there.
    private func removeFolder(_ item: ProviderItem, in folder: ProviderItem, parent: InodeNumber) throws(Errno) {
        guard item.identifier.isLocal else { return try deleteOnServer(item, in: folder) }
        if case .discarded = sync.removingMadeFolder(item.identifier) {
            logger.debug("rmdir \(item.name): a folder only here (\(item.identifier))")
            forgetDeleted(item.identifier)
            return
        }
        let made = try createdOnServer(item, in: parent, for: "rmdir")
        try deleteOnServer(made, in: try writableFolder(parent))
    }

    /// Removes a file as the engine decides: dropped (a new file never sent), folded into a
    /// new version (vim's save), or deleted on the server (after its create, for a new file
    /// that may be there already).
    private func remove(_ item: ProviderItem, in folder: ProviderItem, parent: InodeNumber) throws(Errno) {
        let removal: Removal
        do throws(SyncError) {
            removal = try sync.removing(item, openCopyBase: openCopyBase)
        } catch {
            throw errorNumber(for: error, "remove \(item.name)")
        }
        switch removal {
        case .discarded:
            logger.debug("unlink \(item.name): a file only here (\(item.identifier))")
            forgetDeleted(item.identifier)
        case .adopted(let adoption):
            apply(adoption)  // vim's save: the new file became a new version of the original
        case .awaitCreate:
            let created = try createdOnServer(item, in: parent, for: "delete")
            try deleteOnServer(created, in: try writableFolder(parent))
        case .deleteOnServer:
            logger.debug("unlink \(item.name): delete \(item.identifier) on the server")
            try deleteOnServer(item, in: folder)
        }
    }

    /// Deletes a server item at once, after the renames queued before it (a file moved out of
    /// a folder must leave it on the server before the folder goes).
    private func deleteOnServer(_ item: ProviderItem, in folder: ProviderItem) throws(Errno) {
        guard item.capabilities.contains(.delete) else { throw .permissionDenied }
        if isOffline { return try deleteLater(item) }
        do throws(SyncError) {
            try sync.changingOnServer("delete \(item.name)", deleting: item.identifier) { () throws(ProviderError) in
                do throws(ProviderError) {
                    try backend.delete(item.identifier, baseVersion: nil)
                } catch .notFound {
                    // Already gone: the outcome the caller wanted.
                }
            }
        } catch {
            if case .server(let failure) = error {
                // Lost in transit: deleted later (a replay that finds it gone is done).
                if failure.isUnreachable { return try deleteLater(item) }
                namespaceCallFailed(failure, in: folder.identifier)
            }
            // Renames made before it could not be sent: the server is not taking changes now.
            if case .renamesPending = error, isOffline { return try deleteLater(item) }
            throw errorNumber(for: error, "delete \(item.name)", dropping: item.identifier)
        }
        forgetDeleted(item.identifier)
    }

    /// A delete queued (see `SyncEngine.removedLater`): gone from the mount at once.
    private func deleteLater(_ item: ProviderItem) throws(Errno) {
        do throws(SyncError) {
            try sync.removedLater(item)
        } catch {
            throw errorNumber(for: error, "delete \(item.name)")
        }
        logger.info("delete \(item.name): removed here, on the server when it can take it")
        forgetDeleted(item.identifier)
    }

    /// The errno for a change the engine refused (it logged journal and ordering failures).
    func errorNumber(for error: SyncError, _ operation: @autoclosure () -> String, dropping identifier: ItemIdentifier? = nil) -> Errno {
        switch error {
        case .journal, .renamesPending: .ioError
        case .server(let failure): handle(failure, operation(), dropping: identifier)
        }
    }

    /// Removes a deleted file from the cache and stops its saves; an open copy is kept for
    /// its handles, but nothing more is uploaded from it.
    private func forgetDeleted(_ identifier: ItemIdentifier) {
        // The copy is marked before the engine drops the saves: a save staging meanwhile
        // either sees the mark or has its job dropped here (see `save`).
        let copy = copies.withLock({ $0[identifier] })
        if let copy {
            copy.condition.lock()
            copy.unlinked = true
            copy.dirty = false
            copy.condition.unlock()
        }
        // The engine forgets it before the cache does: a listing fetched in between must not
        // add the deleted file back from the engine's view of what was created here.
        sync.deleted(identifier)
        cache.remove(identifier)
        if let copy { cleanUpIfDone(copy) }
        metadata.flush()  // gone for a remount offline after a kill too (see `apply`)
    }

    /// Waits for the create of a new file that may be on the server already and returns the
    /// server item it became (EIO when that does not happen within the wait).
    private func createdOnServer(_ item: ProviderItem, in parent: InodeNumber, for operation: String) throws(Errno) -> ProviderItem {
        guard sync.settle(item.identifier, timeout: configuration.uploadWaitForRename) else {
            logger.warning("\(operation) \(item.name): its upload to the server has not finished yet")
            throw .ioError
        }
        let now = try child(named: item.name, of: parent)
        guard !now.identifier.isLocal else {
            logger.warning("\(operation) \(item.name): its upload to the server failed; see `sitefs status`")
            throw .ioError
        }
        return now
    }

    public func rename(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName, flags: UInt32,
                       context: RequestContext) throws(Errno) {
        let renameNoReplace: UInt32 = 1, renameExchange: UInt32 = 2
        guard flags & renameExchange == 0 else { throw .invalidArgument }
        let from = try writableFolder(parent)
        let to = try writableFolder(newParent)
        var source = try child(named: try serverName(name), of: parent)
        let targetName = try serverName(newName)
        guard source.capabilities.contains(.rename) else { throw .permissionDenied }
        guard from.identifier.site == to.identifier.site else { throw .improperLink }  // EXDEV: mv copies instead
        if ItemName.violation(of: targetName) != nil { throw .invalidArgument }

        if source.identifier.isLocal, sync.state(of: source.identifier).mayBeOnServer {
            // Being created on the server (or perhaps created before a restart): rename what
            // that creates.
            source = try createdOnServer(source, in: parent, for: "rename")
        }
        var target: ProviderItem?
        if let existing = try listing(of: to.identifier).identifier(named: targetName) {
            if existing == source.identifier { return }
            guard flags & renameNoReplace == 0 else { throw .fileExists }
            target = try currentItem(existing)
        }
        if let replaced = target {
            switch (source.kind, replaced.kind) {
            case (.file, .file):
                if replaced.identifier.isLocal {
                    try remove(replaced, in: to, parent: newParent)  // a file only here is simply replaced
                    target = nil
                }
            case (.folder, .folder):
                if source.identifier.isLocal {
                    // A folder made here takes the place of an empty one: that one goes first.
                    guard try listing(of: replaced.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
                    try removeFolder(replaced, in: to, parent: newParent)
                    target = nil
                }
            case (.folder, _): throw .notDirectory
            default: throw .isDirectory
            }
        }
        try rename(source, parent: parent, to: to, named: targetName, replacing: target, from: from)
    }

    /// Carries out a rename as the engine decides it.
    private func rename(_ source: ProviderItem, parent: InodeNumber, to: ProviderItem, named targetName: String,
                        replacing target: ProviderItem?, from: ProviderItem) throws(Errno) {
        let result: RenameResult
        do throws(SyncError) {
            result = try sync.renaming(source, to: to.identifier, named: targetName, replacing: target,
                                       openCopyBase: openCopyBase)
        } catch {
            throw errorNumber(for: error, "rename \(source.name)")
        }
        switch result {
        case .adopted(let adoption):
            apply(adoption)  // a temp file saved over the original: one new version of it
        case .moved(let moved, let becameDocument):
            logger.debug("rename \(source.name) to \(targetName): \(source.identifier.isLocal ? "a file only here" : "queued") (\(source.identifier))")
            cache.upsert(moved)
            // A lock or temp name given a real one: from now on it is a document to upload.
            if becameDocument, let copy = copies.withLock({ $0[source.identifier] }) {
                copy.condition.lock()
                copy.dirty = true
                copy.condition.unlock()
                try? save(copy)
            }
        case .awaitCreate(let restored):
            // Its create started just now: rename what that creates.
            cache.remove(source.identifier)
            if let restored { cache.upsert(restored) }
            let created = try createdOnServer(source, in: parent, for: "rename")
            try rename(created, parent: parent, to: to, named: targetName, replacing: nil, from: from)
        case .onServer:
            try renameOnServer(source, from: from, to: to, named: targetName, replacing: target)
        }
    }

    /// The version an open copy of the item is based on, for the engine's adoptions.
    private func openCopyBase(_ identifier: ItemIdentifier) -> String? {
        guard let copy = copies.withLock({ $0[identifier] }) else { return nil }
        copy.condition.lock()
        defer { copy.condition.unlock() }
        return copy.baseVersion
    }

    /// A new file took the place of a server file (see `Adoption`): its inode and open copy
    /// now stand for the server item.
    private func apply(_ adoption: Adoption) {
        if let inode = inodes.existingInode(for: adoption.former) { inodes.rebind(inode, to: adoption.item.identifier) }
        rekeyCopy(from: adoption.former, to: adoption.item)
        cache.upsert(adoption.shown)
        cache.remove(adoption.former)
    }

    /// Folders, and files renamed over a server file: made on the server at once (queued
    /// when it cannot take them now, see `renameLater`).
    private func renameOnServer(_ source: ProviderItem, from: ProviderItem, to: ProviderItem, named targetName: String,
                                replacing target: ProviderItem?) throws(Errno) {
        if isOffline || to.identifier.isLocal {
            return try renameLater(source, to: to, named: targetName, replacing: target)
        }
        if let target, target.kind == .folder {
            // POSIX: a directory may replace an empty one.
            guard try listing(of: target.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
            try deleteOnServer(target, in: to)
        }
        // The content being renamed must be on the server first: a save queued for the
        // source would otherwise land on an item the rename just replaced.
        if source.kind == .file, !sync.settle(source.identifier, timeout: configuration.uploadWaitForRename) {
            logger.warning("rename \(source.name): its upload is still pending")
            throw .ioError
        }
        let current = try currentItem(source.identifier)  // its upload may have changed it
        let replace = target?.kind == .file
        let changes = ItemChanges(name: ItemName.same(targetName, current.name) ? nil : targetName,
                                  parent: to.identifier == current.parent ? nil : to.identifier,
                                  replaceExisting: replace)
        let result: ProviderItem
        do throws(SyncError) {
            result = try sync.changingOnServer("rename \(source.name)") { () throws(ProviderError) in
                try backend.update(current.identifier, changes, baseVersion: nil)
            }
        } catch {
            if case .server(let failure) = error {
                // Lost in transit: renamed later (a replay of a rename that was applied changes nothing).
                if failure.isUnreachable, target == nil { return try renameLater(current, to: to, named: targetName, replacing: nil) }
                namespaceCallFailed(failure, in: from.identifier, to.identifier)
            }
            throw errorNumber(for: error, "rename \(source.name) to \(targetName)", dropping: current.identifier)
        }
        if result.identifier != current.identifier {
            // Rename-over: the destination's id survived with the source's content.
            cache.remove(current.identifier)
            if let sourceInode = inodes.existingInode(for: current.identifier) { inodes.rebind(sourceInode, to: result.identifier) }
            rekeyCopy(from: current.identifier, to: result)
        }
        cache.upsert(result)
    }

    /// A rename the server cannot take now (offline, or into a folder made here): shown at
    /// once and sent with the renames, after the operations made before it. Over a server
    /// item it is a delete of that item (queued first) and the rename: offline, the replaced
    /// document's history is not carried over to the new content.
    private func renameLater(_ source: ProviderItem, to: ProviderItem, named targetName: String,
                             replacing target: ProviderItem?) throws(Errno) {
        if let target {
            if target.kind != .file, try !listing(of: target.identifier).identifiers.isEmpty { throw .directoryNotEmpty }
            try deleteOnServer(target, in: to)
        }
        let moved: ProviderItem?
        do throws(SyncError) {
            moved = try sync.renameLater(source, to: to.identifier, named: targetName)
        } catch {
            throw errorNumber(for: error, "rename \(source.name)")
        }
        guard let moved else { throw .permissionDenied }  // a site: not renamed here
        logger.info("rename \(source.name) to \(targetName): shown here, on the server when it can take it")
        cache.upsert(moved)
    }

    /// A folder made offline is on the server now: what was made or moved into it here is
    /// shown in the server folder (the cache's entries follow the engine's view).
    func showChildren(of folder: ItemIdentifier) {
        let (_, children) = sync.complete(names: [], identifiers: [], of: folder)
        for child in children {
            if let created = sync.createdItem(child) { cache.upsert(created) }
            else if let known = cache.item(child) { cache.upsert(sync.view(known)) }
        }
        cache.forgetListing(of: folder)
    }

    /// An open local copy follows its item to the surviving identifier.
    func rekeyCopy(from old: ItemIdentifier, to item: ProviderItem) {
        copies.withLock { copies in
            if let displaced = copies.removeValue(forKey: item.identifier) {
                displaced.condition.lock()
                displaced.unlinked = true
                displaced.condition.unlock()
            }
            guard let copy = copies.removeValue(forKey: old) else { return }
            copy.condition.lock()
            copy.identifier = item.identifier
            copy.baseVersion = item.version
            copy.condition.unlock()
            copies[item.identifier] = copy
        }
    }

    public func statistics(_ inode: InodeNumber) throws(Errno) -> FilesystemStatistics {
        // The server sets no quota; report plenty so programs that check free space proceed.
        FilesystemStatistics(blockSize: 4096, blocks: 1 << 32, freeBlocks: 1 << 31, availableBlocks: 1 << 31,
                             files: 1 << 24, freeFiles: 1 << 23, maximumNameLength: 255)
    }

    /// Tells the kernel to forget a name it may have cached.
    func invalidateEntry(in folder: ItemIdentifier?, named name: String) {
        guard let folder, let parent = inodes.existingInode(for: folder),
              let invalidator = invalidator.withLock({ $0 }) else { return }
        invalidator.invalidateEntry(parent: parent, name: FileName(name))
    }
}
