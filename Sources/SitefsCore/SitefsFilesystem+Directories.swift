import SitefsProvider
import SitefsStore
import SystemPackage
import SitefsSync

extension SitefsFilesystem {
    public func lookup(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) -> Entry {
        if parent == .root || VirtualNodeTable.isVirtual(parent), let entry = try virtualLookup(parent: parent, name: name) {
            return entry
        }
        let item = try child(named: try serverName(name), of: parent)
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return entry
    }

    public func attributes(of inode: InodeNumber, handle: HandleID?, context: RequestContext) throws(Errno) -> AttributesReply {
        guard inode != .root else {
            return AttributesReply(attributes: AttributeMapping.root(configuration: configuration, mountedAt: startedAt), timeout: configuration.kernelCacheTimeout)
        }
        if VirtualNodeTable.isVirtual(inode) {
            return AttributesReply(attributes: try virtualAttributes(try virtualNode(inode), inode: inode),
                                   timeout: configuration.kernelCacheTimeout)
        }
        let item = try currentItem(try identifier(of: inode), openThrough: handle)
        if item.kind == .file { itemReadPause.withLock { $0 }?() }
        return AttributesReply(attributes: attributes(of: item, inode: inode), timeout: configuration.kernelCacheTimeout)
    }

    public func openDirectory(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> HandleID {
        if VirtualNodeTable.isVirtual(inode) { return try virtualOpenDirectory(try virtualNode(inode)) }
        let folder: ItemIdentifier? = inode == .root ? nil : try identifier(of: inode)
        if let folder {
            guard try currentItem(folder).kind.isContainer else { throw .notDirectory }
        }
        var snapshot = DirectoryHandle.Snapshot()
        // A fresh cached listing serves at once; otherwise pages come as the kernel reads.
        // The root always uses a full listing: site names are made unique over all sites.
        let cached: ItemCache.Listing?
        // So does a folder with changes made here that the server does not have yet.
        // And a folder made here (the server does not have it yet).
        // Offline, what was listed before serves, however old (as `listing(of:)` does).
        if let folder, !folder.isLocal, !sync.state(of: folder, reading: .namespace).changesListing {
            cached = cache.listing(of: folder) ?? (isOffline ? cache.listing(of: folder, ignoringAge: true) : nil)
        } else {
            cached = try listing(of: folder)
        }
        if let cached {
            snapshot = .init(names: cached.names, identifiers: cached.identifiers, next: nil, complete: true)
        }
        let fetch = snapshot.complete ? nil : folder.map { cache.beginListing(of: $0) }
        if !snapshot.complete { snapshot.bounds = listingBounds(of: folder) }
        return handles.add(DirectoryHandle(folder: folder, snapshot: snapshot, pages: pageReadAhead(of: folder), fetch: fetch))
    }

    /// The entries from `offset` on, as many as `emit` takes. For a file manager, the
    /// server's thumbnails of what was listed are filed before the answer goes
    /// (`fileServerThumbnails`).
    public func readDirectory(_ inode: InodeNumber, handle: HandleID, offset: UInt64, plus: Bool, context: RequestContext,
                              emit: (DirectoryEntry) -> Bool) throws(Errno) {
        if VirtualFolders.isVirtualHandle(handle) {
            return try virtualReadDirectory(inode, handle: handle, offset: offset, plus: plus, emit: emit)
        }
        guard let directory = handles.directory(handle) else { throw .badFileDescriptor }
        guard configuration.thumbnails != nil else {
            return try listEntries(inode, directory: directory, offset: offset, plus: plus, emit: emit)
        }
        var listed: [ItemIdentifier] = []
        try listEntries(inode, directory: directory, offset: offset, plus: plus) { entry in
            guard emit(entry) else { return false }
            if entry.mode == AttributeMapping.regularType, let identifier = inodes.identifier(of: entry.inode) { listed.append(identifier) }
            return true
        }
        fileServerThumbnails(listed, in: directory.folder, context: context)
    }

    private func listEntries(_ inode: InodeNumber, directory: DirectoryHandle, offset: UInt64, plus: Bool,
                             emit: (DirectoryEntry) -> Bool) throws(Errno) {
        let dot = AttributeMapping.directoryType
        if offset < 1, !emit(DirectoryEntry(name: FileName("."), inode: inode, mode: dot, nextOffset: 1, entry: nil)) { return }
        if offset < 2, !emit(DirectoryEntry(name: FileName(".."), inode: .root, mode: dot, nextOffset: 2, entry: nil)) { return }
        var index = Int(max(offset, 2) - 2)
        while true {
            let (next, token, complete) = directory.snapshot.withLock { snapshot -> ((String, ItemIdentifier)?, PageToken?, Bool) in
                index < snapshot.names.count ? ((snapshot.names[index], snapshot.identifiers[index]), nil, false)
                    : (nil, snapshot.next, snapshot.complete)
            }
            guard let (name, identifier) = next else {
                if complete { return }
                try fetchNextPage(into: directory, after: token)
                continue
            }
            // An entry listed but gone from the cache since (deleted meanwhile) is skipped; one
            // made here and on the server since is listed as the server's item (`git fsck`
            // found a tree whose upload ended between opendir and readdir "missing").
            guard let item = cache.item(identifier) ?? successor(listedAs: name, of: identifier) else {
                index += 1
                continue
            }
            let inodeNumber = inodes.inode(for: identifier)
            let entry = plus ? self.entry(for: item, inode: inodeNumber) : nil
            let mode = AttributeMapping.fileType(of: item.kind)
            guard emit(DirectoryEntry(name: FileName(name), inode: inodeNumber, mode: mode, nextOffset: UInt64(index + 3), entry: entry)) else {
                return
            }
            if plus { inodes.countLookup(inodeNumber) }
            index += 1
        }
    }

    /// The server's item that took the place of `identifier`, made here and listed as `name`,
    /// when it kept that name (one saved under another name is listed by the next listing).
    private func successor(listedAs name: String, of identifier: ItemIdentifier) -> ProviderItem? {
        guard identifier.isLocal, let item = successor(of: identifier), item.name.utf8.elementsEqual(name.utf8) else { return nil }
        return item
    }

    /// Appends the next server page to an open directory's snapshot (network I/O outside
    /// the snapshot's lock; a concurrent reader that got there first wins).
    private func fetchNextPage(into directory: DirectoryHandle, after token: PageToken?) throws(Errno) {
        let page = try directory.pages.page(after: token)
        let (finished, admitted) = directory.snapshot.withLock { snapshot -> (DirectoryHandle.Snapshot?, Result<[String], ListingBounds.Refusal>) in
            guard !snapshot.complete, snapshot.next == token else { return (nil, .success([])) }
            let admitted = Result { () throws(ListingBounds.Refusal) in
                try snapshot.bounds.append(page, to: &snapshot.names, &snapshot.identifiers)
            }
            guard case .success = admitted else { return (nil, admitted) }
            snapshot.next = page.next
            snapshot.complete = page.next == nil
            return (snapshot.complete ? snapshot : nil, admitted)
        }
        try report(admitted, of: directory.folder)  // logged with the snapshot's lock released
        // A folder enumerated to the end is a complete listing: later lookups use it.
        if let finished, let fetch = directory.fetch {
            cache.storeListing(ItemCache.Listing(names: finished.names, identifiers: finished.identifiers), fetch: fetch)
        }
    }

    /// The journal commits deletes and rmdirs without waiting for the disk, as POSIX asks
    /// only this call to make them durable: here it flushes them, whatever the folder.
    public func syncDirectory(_ inode: InodeNumber, handle: HandleID) throws(Errno) {
        do {
            try sync.makeRemovalsDurable()
        } catch {
            throw errorNumber(for: error, "fsyncdir")
        }
    }

    public func releaseDirectory(_ inode: InodeNumber, handle: HandleID) {
        if VirtualFolders.isVirtualHandle(handle) { return virtual.close(handle) }
        if let fetch = handles.removeDirectory(handle)?.fetch { cache.endRead(fetch) }  // a no-op once stored
    }
}
