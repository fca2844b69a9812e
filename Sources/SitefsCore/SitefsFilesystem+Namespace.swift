import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

/// mkdir, unlink, rmdir and rename.
///
/// The core resolves names and kinds, checks what POSIX asks (a folder replaced or removed
/// is empty), hands the change to the sync engine once (`SyncEngine.apply`), and applies
/// what it came to to its own tables: inodes, open copies, the item cache. Whether a change
/// goes to the server now or is queued for later, and in what order, is the engine's
/// decision ("Now or later" at `SyncEngine`); the core never asks whether the server is
/// reachable for it. Files created here and renames of files are local first, which is what
/// lets an editor's save sequence fold into one new version of the original document
/// (SyncEngine+EditorSaves).
extension SitefsFilesystem {
    public func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry {
        try refuseVirtual(parent, name: name)
        let folder = try writableFolder(parent)
        let folderName = try serverName(name)
        if let violation = ItemName.violation(of: folderName) {
            logger.warning("mkdir \(folderName.debugDescription): the server would refuse this name (\(violation))")
            throw .invalidArgument
        }
        if try listing(of: folder.identifier).identifier(named: folderName) != nil { throw .fileExists }
        let outcome: NamespaceOutcome
        do throws(SyncError) {
            outcome = try sync.apply(.makeFolder(named: folderName, in: folder.identifier))
        } catch {
            throw errorNumber(for: error, "mkdir \(folderName)", listings: folder.identifier)
        }
        var item: ProviderItem
        switch outcome {
        case .sent(let made?):
            item = made
            cache.storeListing(ItemCache.Listing(names: [], identifiers: []), of: made.identifier)
        case .queued(let made?, _):
            item = made  // a local folder, shown at once
        default:
            logger.error("mkdir \(folderName): the sync engine made no folder")
            throw .ioError
        }
        cache.upsert(item)
        localTimes.entriesChanged(folder.identifier, now: Self.now())
        recordMaker(of: inodes.inode(for: item.identifier), context: context)
        let permissions = UInt16(truncatingIfNeeded: mode) & ProviderItem.permissionBits
        if permissions != AttributeMapping.permissions(of: item) {
            // The creator's umask (or an explicit mode, `mkdir -m`): kept like a chmod. The
            // folder exists either way; a mode the server refused is logged, not an error.
            do { item = try changeMode(of: item, to: UInt32(permissions)) } catch {
                logger.warning("mkdir \(folderName): its mode \(String(permissions, radix: 8)) was not kept: \(error)")
            }
        }
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return entry
    }

    public func unlink(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        try refuseVirtual(parent, name: name)
        _ = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard !item.kind.isContainer else { throw .isDirectory }
        // Someone else's lock file: theirs until they close the document.
        guard item.identifier.lockedDocument == nil else { throw .permissionDenied }
        try remove(item, parent: parent)
        localTimes.entriesChanged(item.parent, now: Self.now())
        lockFileRemoved(item.name, in: item.parent)
    }

    public func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        try refuseVirtual(parent, name: name)
        _ = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .folder else { throw item.kind == .site ? .permissionDenied : .notDirectory }
        guard try listing(of: item.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
        try remove(item, parent: parent)
        localTimes.entriesChanged(item.parent, now: Self.now())
    }

    /// Removes a file or an empty folder as the engine decides: dropped (made here and never
    /// sent), folded into a new version (vim's save), or removed on the server now or later
    /// (for something made here that may be there already: once its create is done).
    private func remove(_ item: ProviderItem, parent: InodeNumber) throws(Errno) {
        let operation = item.kind.isContainer ? "rmdir" : "unlink"
        let outcome: NamespaceOutcome
        do throws(SyncError) {
            outcome = try sync.apply(.remove(item))
        } catch {
            throw errorNumber(for: error, "\(operation) \(item.name)", dropping: item.identifier, listings: item.parent)
        }
        switch outcome {
        case .discarded:
            logger.debug("\(operation) \(item.name): made here only (\(item.identifier))")
            forgetDeleted(item.identifier)
        case .adopted(let adoption):
            apply(adoption)  // vim's save: the new file became a new version of the original
        case .awaitingCreate:
            try remove(try createdOnServer(item, in: parent, for: operation), parent: parent)
        case .sent, .queued:
            logger.debug("\(operation) \(item.name): \(item.identifier) removed")
            forgetDeleted(item.identifier)
        }
    }

    /// The errno for a change the engine refused (it logged journal and ordering failures).
    /// A server failure in transit also drops the cached `listings` it may have changed.
    func errorNumber(for error: SyncError, _ operation: @autoclosure () -> String, dropping identifier: ItemIdentifier? = nil,
                     listings: ItemIdentifier?...) -> Errno {
        switch error {
        case .journal, .renamesPending, .uploadPending: return .ioError
        case .notPermitted: return .permissionDenied
        case .server(let failure):
            namespaceCallFailed(failure, in: listings.compactMap { $0 })
            return handle(failure, operation(), dropping: identifier)
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
        sync.forget(identifier)
        cache.remove(identifier)
        if let copy { cleanUpIfDone(copy) }
        metadata.flush()  // gone for a remount offline after a kill too (see `apply`)
    }

    /// Waits for the create of something made here that may be on the server already and
    /// returns the server item it became (EIO when that does not happen within the wait).
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
        try refuseVirtual(parent, name: name)
        try refuseVirtual(newParent, name: newName)
        let renameNoReplace: UInt32 = 1, renameExchange: UInt32 = 2
        guard flags & renameExchange == 0 else { throw .invalidArgument }
        let from = try writableFolder(parent)
        let to = try writableFolder(newParent)
        var source = try child(named: try serverName(name), of: parent)
        let targetName = try serverName(newName)
        guard source.capabilities.contains(.rename) else { throw .permissionDenied }
        guard from.identifier.site == to.identifier.site else { throw .improperLink }  // EXDEV: mv copies instead
        if ItemName.violation(of: targetName) != nil { throw .invalidArgument }

        if source.identifier.isLocal, sync.state(of: source.identifier, reading: .queue).mayBeOnServer {
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
        if target?.identifier.lockedDocument != nil { throw .permissionDenied }  // someone else's lock file
        if let replaced = target {
            switch (source.kind, replaced.kind) {
            case (.file, .file):
                if replaced.identifier.isLocal {
                    try remove(replaced, parent: newParent)  // a file only here is simply replaced
                    target = nil
                }
            case (.symlink, .file), (.file, .symlink), (.symlink, .symlink):
                // Not a new version of anything: the link or file there goes first, then the
                // rename (two steps on the server; POSIX's atomic replace holds on the mount).
                try remove(replaced, parent: newParent)
                target = nil
            case (.folder, .folder):
                // POSIX: a directory may replace an empty one, which goes first.
                guard try listing(of: replaced.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
                try remove(replaced, parent: newParent)
                target = nil
            case (.folder, _): throw .notDirectory
            default: throw .isDirectory
            }
        }
        try rename(source, parent: parent, to: to, named: targetName, replacing: target, from: from)
        let now = Self.now()
        localTimes.changed(source.identifier, now: now)
        localTimes.entriesChanged(from.identifier, now: now)
        localTimes.entriesChanged(to.identifier, now: now)
        if !ItemName.same(source.name, targetName) || from.identifier != to.identifier {
            lockFileRemoved(source.name, in: from.identifier)
        }
    }

    /// Carries out a rename as the engine decides it.
    private func rename(_ source: ProviderItem, parent: InodeNumber, to: ProviderItem, named targetName: String,
                        replacing target: ProviderItem?, from: ProviderItem) throws(Errno) {
        let outcome: NamespaceOutcome
        do throws(SyncError) {
            outcome = try sync.apply(.rename(source, to: to.identifier, named: targetName, replacing: target))
        } catch {
            throw errorNumber(for: error, "rename \(source.name) to \(targetName)", dropping: source.identifier,
                              listings: from.identifier, to.identifier)
        }
        switch outcome {
        case .adopted(let adoption):
            apply(adoption)  // a temp file saved over the original: one new version of it
        case .queued(let moved, let becameDocument):
            logger.debug("rename \(source.name) to \(targetName): queued (\(source.identifier))")
            if let target { forgetDeleted(target.identifier) }  // removed first, now or later
            if let moved { cache.upsert(moved) }
            // A lock or temp name given a real one: from now on it is a document to upload.
            if becameDocument, let copy = copies.withLock({ $0[source.identifier] }) {
                copy.condition.lock()
                copy.dirty = true
                copy.condition.unlock()
                try? save(copy)
            }
        case .sent(let renamed):
            guard let renamed else { break }
            if renamed.identifier != source.identifier {
                // Rename-over: the destination's id survived with the source's content.
                succeed(source.identifier, by: renamed, shown: renamed)
            } else {
                cache.upsert(renamed)
            }
        case .awaitingCreate(let restored):
            // Its create started just now: rename what that creates.
            cache.remove(source.identifier)
            if let restored { cache.upsert(restored) }
            let created = try createdOnServer(source, in: parent, for: "rename")
            try rename(created, parent: parent, to: to, named: targetName, replacing: nil, from: from)
        case .discarded:
            break  // not an outcome of a rename
        }
    }

    /// The version an open copy of the item is based on, for the engine's adoptions.
    func openCopyBase(_ identifier: ItemIdentifier) -> String? {
        guard let copy = copies.withLock({ $0[identifier] }) else { return nil }
        copy.condition.lock()
        defer { copy.condition.unlock() }
        return copy.baseVersion
    }

    /// A new file took the place of a server file (see `Adoption`): its inode and open copy
    /// now stand for the server item.
    private func apply(_ adoption: Adoption) {
        succeed(adoption.former, by: adoption.item, shown: adoption.shown)
    }

    /// `former` lives on as `item` (`shown`: as the mount shows it). The steps go in an order
    /// that leaves every reader an answer, whichever identifier it read:
    /// 1. a new successor's metadata, not listed yet: a reader that follows the inode finds
    ///    it without asking the server (the answer would list it beside `former`); a
    ///    successor known already (a file saved over) is found as it was, with its save;
    /// 2. the inode: a reader holding `former` finds the successor through it
    ///    (`successor(of:)`);
    /// 3. the cache's listings, in one step: never both entries listed, nor neither;
    /// 4. the open copy, last: moved while the cache lacked the successor, a `stat` in between
    ///    would find neither the copy nor the server's item and answer with the size the
    ///    item had when made (0 for a new file, which `git` takes for a corrupt object).
    func succeed(_ former: ItemIdentifier, by item: ProviderItem, shown: ProviderItem) {
        let pause = successionPause.withLock { $0 }
        pause?(.begun)
        cache.storeIfUnknown(shown)
        pause?(.successorKnown)
        if let inode = inodes.existingInode(for: former) { inodes.rebind(inode, to: item.identifier) }
        pause?(.inodeRebound)
        cache.replace(former, with: shown)
        pause?(.cacheReplaced)
        rekeyCopy(from: former, to: item)
        pause?(.copyMoved)
    }

    /// The steps of `succeed(_:by:shown:)`, for `successionPause`.
    enum SuccessionStep: CaseIterable, Sendable { case begun, successorKnown, inodeRebound, cacheReplaced, copyMoved }

    /// The item that took the place of `former`, a retired identifier (a new file now on the
    /// server, a file saved over another): found through the inode `former` had, which
    /// stands for the successor now. Nil for an identifier not retired.
    func successor(of former: ItemIdentifier) -> ProviderItem? {
        guard let inode = inodes.existingInode(for: former), let current = inodes.identifier(of: inode),
              current != former else { return nil }
        return cache.item(current)
    }

    /// A folder made offline is on the server now: what was made or moved into it here is
    /// shown in the server folder (the cache's entries follow the engine's view).
    func showChildren(of folder: ItemIdentifier) {
        let (_, children) = sync.view(names: [], identifiers: [], of: folder)
        for child in children {
            if child.isLocal, let created = sync.state(of: child, reading: .namespace).created { cache.upsert(created) }
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
