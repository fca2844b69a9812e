import SitefsProvider
import SitefsStore
import SystemPackage

extension SitefsFilesystem {
    public func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry {
        let folder = try writableFolder(parent)
        let folderName = try serverName(name)
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
        _ = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .file else { throw .isDirectory }
        try delete(item)
    }

    public func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        _ = try writableFolder(parent)
        let item = try child(named: try serverName(name), of: parent)
        guard item.kind == .folder else { throw item.kind == .site ? .permissionDenied : .notDirectory }
        guard try listing(of: item.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
        try delete(item)
    }

    private func delete(_ item: ProviderItem) throws(Errno) {
        guard item.capabilities.contains(.delete) else { throw .permissionDenied }
        do {
            try backend.delete(item.identifier, baseVersion: nil)
        } catch ProviderError.notFound {
            // Already gone: the outcome the caller wanted.
        } catch {
            if let parent = item.parent { namespaceCallFailed(error, in: parent) }
            throw handle(error, "delete \(item.name)", dropping: item.identifier)
        }
        cache.remove(item.identifier)
        uploader.cancel(item.identifier)
        if let copy = copies.withLock({ $0[item.identifier] }) {
            copy.condition.lock()
            copy.unlinked = true
            copy.dirty = false
            copy.condition.unlock()
            cleanUpIfDone(copy)
        }
    }

    public func rename(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName, flags: UInt32,
                       context: RequestContext) throws(Errno) {
        let renameNoReplace: UInt32 = 1, renameExchange: UInt32 = 2
        guard flags & renameExchange == 0 else { throw .invalidArgument }
        let from = try writableFolder(parent)
        let to = try writableFolder(newParent)
        let source = try child(named: try serverName(name), of: parent)
        let targetName = try serverName(newName)
        guard source.capabilities.contains(.rename) else { throw .permissionDenied }
        guard from.identifier.site == to.identifier.site else { throw .improperLink }  // EXDEV: mv copies instead

        let existing = try listing(of: to.identifier).identifier(named: targetName)
        if existing == source.identifier { return }
        var replace = false
        if let existing {
            guard flags & renameNoReplace == 0 else { throw .fileExists }
            let target = try currentItem(existing)
            switch (source.kind, target.kind) {
            case (.file, .file):
                replace = true
            case (.folder, .folder):
                // POSIX: a directory may replace an empty one.
                guard try listing(of: target.identifier).identifiers.isEmpty else { throw .directoryNotEmpty }
                try delete(target)
            case (.folder, _): throw .notDirectory
            default: throw .isDirectory
            }
        }
        // The content being renamed must be on the server first: a save queued for the
        // source would otherwise land on an item the rename just replaced.
        if source.kind == .file, !uploader.waitUntilIdle(source.identifier, timeout: configuration.uploadWaitForRename) {
            logger.warning("rename \(source.name): its upload is still pending")
            throw .ioError
        }
        let changes = ItemChanges(name: targetName == source.name ? nil : targetName,
                                  parent: to.identifier == from.identifier ? nil : to.identifier,
                                  replaceExisting: replace)
        let result: ProviderItem
        do {
            result = try backend.update(source.identifier, changes, baseVersion: nil)
        } catch {
            namespaceCallFailed(error, in: from.identifier, to.identifier)
            throw handle(error, "rename \(source.name) to \(targetName)", dropping: source.identifier)
        }
        if result.identifier != source.identifier {
            // Rename-over: the destination's id survived with the source's content.
            cache.remove(source.identifier)
            if let sourceInode = inodes.existingInode(for: source.identifier) { inodes.rebind(sourceInode, to: result.identifier) }
            rekeyCopy(from: source.identifier, to: result)
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
