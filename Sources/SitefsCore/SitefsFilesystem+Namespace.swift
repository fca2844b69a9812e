import SitefsAPI
import SitefsProvider
import SitefsStore
import SystemPackage

/// mkdir, unlink, rmdir and rename.
///
/// Files created here and renames of server files are local first (see LocalNamespace):
/// they reach the server through the uploader's queue after the settle delay, which is what
/// lets an editor's save sequence fold into one new version of the original document:
/// - temp file + rename over the original (LibreOffice, gedit, `sed -i`): the new file's
///   content becomes a new version of the original item (`adopt`);
/// - rename the original away, write a new file under its name, delete the renamed
///   original (vim): the same, when the renamed original is deleted.
/// Changes that must be made on the server at once (mkdir, rmdir, deleting a server file,
/// renaming a folder, renaming over a server file) first wait for the renames queued before
/// them, so the server sees changes in the order they were made.
extension SitefsFilesystem {
    public func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry {
        let folder = try writableFolder(parent)
        let folderName = try serverName(name)
        if try listing(of: folder.identifier).identifier(named: folderName) != nil { throw .fileExists }
        do {
            let item = try backend.createFolder(named: folderName, in: folder.identifier)
            cache.upsert(item)
            cache.storeListing(ItemCache.Listing(names: [], identifiers: []), of: item.identifier)
            let entry = entry(for: item)
            inodes.countLookup(entry.attributes.inode)
            return entry
        } catch {
            namespaceCallFailed(error, in: folder.identifier)
            throw handle(error, "mkdir \(folderName)")
        }
    }

    public func unlink(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        let folder = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .file else { throw .isDirectory }
        if item.identifier.isLocal {
            logger.debug("unlink \(item.name): a file only here (\(item.identifier))")
            try discard(item, in: parent)
            return
        }
        if let rename = uploader.pendingRename(of: item.identifier),
           let successor = namespace.created(named: rename.serverName, in: rename.serverParent),
           try adoptAsSuccessor(successor, of: item, undoing: rename) {
            return  // vim's save: the new file became a new version of the original
        }
        logger.debug("unlink \(item.name): delete \(item.identifier) on the server")
        try deleteOnServer(item, in: folder)
    }

    public func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        let folder = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .folder else { throw item.kind == .site ? .permissionDenied : .notDirectory }
        guard try listing(of: item.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
        try deleteOnServer(item, in: folder)
    }

    /// Deletes a server item at once, after the renames queued before (a file moved out of a
    /// folder must leave it on the server before the folder goes).
    private func deleteOnServer(_ item: ProviderItem, in folder: ProviderItem) throws(Errno) {
        guard item.capabilities.contains(.delete) else { throw .permissionDenied }
        try flushRenames(before: "delete \(item.name)")
        do {
            try uploader.beginDelete(item.identifier)
        } catch {
            logger.error("cannot record the delete of \(item.name) in the upload journal: \(error)")
            throw .ioError
        }
        defer { uploader.endDelete(item.identifier) }
        do {
            try backend.delete(item.identifier, baseVersion: nil)
        } catch ProviderError.notFound {
            // Already gone: the outcome the caller wanted.
        } catch {
            namespaceCallFailed(error, in: folder.identifier)
            throw handle(error, "delete \(item.name)", dropping: item.identifier)
        }
        forgetDeleted(item.identifier)
    }

    /// Removes a deleted file from the cache and stops its saves; an open copy is kept for
    /// its handles, but nothing more is uploaded from it.
    private func forgetDeleted(_ identifier: ItemIdentifier) {
        cache.remove(identifier)
        namespace.removeCreated(identifier)
        namespace.setMoved(identifier, to: nil)
        // The copy is marked before the uploads are cancelled: a save staging meanwhile
        // either sees the mark or has its job cancelled here (see `save`).
        let copy = copies.withLock({ $0[identifier] })
        if let copy {
            copy.condition.lock()
            copy.unlinked = true
            copy.dirty = false
            copy.condition.unlock()
        }
        uploader.cancel(identifier)
        if let copy { cleanUpIfDone(copy) }
    }

    /// Deletes a file that exists only here: it never reaches the server. If it may be there
    /// already (its create in flight, or resumed after a restart), that create is waited for
    /// and the file deleted on the server instead.
    private func discard(_ item: ProviderItem, in parent: InodeNumber) throws(Errno) {
        if uploader.discardIfNotSent(item.identifier) {
            forgetDeleted(item.identifier)
            return
        }
        let created = try createdOnServer(item, in: parent, for: "delete")
        try deleteOnServer(created, in: try writableFolder(parent))
    }

    /// Waits for the create of a new file that may be on the server already and returns the
    /// server item it became (EIO when that does not happen within the wait).
    private func createdOnServer(_ item: ProviderItem, in parent: InodeNumber, for operation: String) throws(Errno) -> ProviderItem {
        guard uploader.waitUntilIdle(item.identifier, timeout: configuration.uploadWaitForRename) else {
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

    private func flushRenames(before operation: @autoclosure () -> String) throws(Errno) {
        guard uploader.flushRenames(timeout: configuration.namespaceWait) else {
            logger.error("\(operation()): renames made before it could not be sent to the server; try again when it is reachable")
            throw .ioError
        }
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

        if source.identifier.isLocal, uploader.mayBeOnServer(source.identifier) {
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
                    try discard(replaced, in: newParent)  // a file only here is simply replaced
                    target = nil
                } else if source.identifier.isLocal, try adopt(source, into: replaced) {
                    return  // a temp file saved over the original: one new version of it
                }
            case (.folder, .folder):
                break
            case (.folder, _): throw .notDirectory
            default: throw .isDirectory
            }
        }
        if source.kind == .file, target == nil {
            logger.debug("rename \(source.name) to \(targetName): \(source.identifier.isLocal ? "a file only here" : "queued") (\(source.identifier))")
            if source.identifier.isLocal {
                if !moveLocal(source, to: to.identifier, named: targetName) {
                    // Its create started just now: rename what that creates.
                    try queueRename(try createdOnServer(source, in: parent, for: "rename"), to: to.identifier, named: targetName)
                }
            } else {
                try queueRename(source, to: to.identifier, named: targetName)
            }
            return
        }
        try renameOnServer(source, from: from, to: to, named: targetName, replacing: target)
    }

    /// A file only here changes name: it will be created under the new one. False (nothing
    /// changed) when its create may have reached the server already.
    private func moveLocal(_ item: ProviderItem, to folder: ItemIdentifier, named name: String) -> Bool {
        var moved = item
        moved.parent = folder
        moved.name = name
        // Shown under the new name first, so a save made meanwhile already goes there.
        namespace.addCreated(moved)
        cache.upsert(moved)
        guard uploader.retarget(item.identifier, name: name, parent: folder) else {
            // Back as it was, unless its create has finished: then the server item stands
            // for it and the local one must not come back.
            namespace.removeCreated(item.identifier)
            cache.remove(item.identifier)
            if !uploader.isRetiredCreation(item.identifier) {
                namespace.addCreated(item)
                cache.upsert(item)
            }
            return false
        }
        // A lock or temp name given a real one: from now on it is a document to upload.
        if LocalOnlyNames.matches(item.name), !LocalOnlyNames.matches(name),
           let copy = copies.withLock({ $0[item.identifier] }) {
            copy.condition.lock()
            copy.dirty = true
            copy.condition.unlock()
            try? save(copy)
        }
        return true
    }

    /// A server file's rename is shown at once and sent after the settle delay.
    private func queueRename(_ item: ProviderItem, to folder: ItemIdentifier, named name: String) throws(Errno) {
        guard let currentParent = item.parent else { throw .permissionDenied }
        let pending = uploader.pendingRename(of: item.identifier)
        let rename = Uploader.RenameJob(identifier: item.identifier, name: name, parent: folder,
                                        serverName: pending?.serverName ?? item.name,
                                        serverParent: pending?.serverParent ?? currentParent)
        do {
            try uploader.enqueueRename(rename)
        } catch {
            logger.error("cannot record the rename of \(item.name) in the journal: \(error)")
            throw .ioError
        }
        let back = ItemName.same(name, rename.serverName) && folder == rename.serverParent
        namespace.setMoved(item.identifier, to: back ? nil : (folder, name))
        var moved = item
        moved.parent = folder
        moved.name = name
        cache.upsert(moved)
    }

    /// Folders, and files renamed over a server file: made on the server at once.
    private func renameOnServer(_ source: ProviderItem, from: ProviderItem, to: ProviderItem, named targetName: String,
                                replacing target: ProviderItem?) throws(Errno) {
        try flushRenames(before: "rename \(source.name)")
        if let target, target.kind == .folder {
            // POSIX: a directory may replace an empty one.
            guard try listing(of: target.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
            try deleteOnServer(target, in: to)
        }
        // The content being renamed must be on the server first: a save queued for the
        // source would otherwise land on an item the rename just replaced.
        if source.kind == .file, !uploader.waitUntilIdle(source.identifier, timeout: configuration.uploadWaitForRename) {
            logger.warning("rename \(source.name): its upload is still pending")
            throw .ioError
        }
        let current = try currentItem(source.identifier)  // its upload may have changed it
        let replace = target?.kind == .file
        let changes = ItemChanges(name: ItemName.same(targetName, current.name) ? nil : targetName,
                                  parent: to.identifier == current.parent ? nil : to.identifier,
                                  replaceExisting: replace)
        let result: ProviderItem
        do {
            result = try backend.update(current.identifier, changes, baseVersion: nil)
        } catch {
            namespaceCallFailed(error, in: from.identifier, to.identifier)
            throw handle(error, "rename \(source.name) to \(targetName)", dropping: current.identifier)
        }
        if result.identifier != current.identifier {
            // Rename-over: the destination's id survived with the source's content.
            cache.remove(current.identifier)
            if let sourceInode = inodes.existingInode(for: current.identifier) { inodes.rebind(sourceInode, to: result.identifier) }
            rekeyCopy(from: current.identifier, to: result)
        }
        cache.upsert(result)
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
}
