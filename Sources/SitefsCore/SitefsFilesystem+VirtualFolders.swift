import SitefsAPI
import SitefsProvider
import SitefsStore
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The FUSE requests on the search and versions folders (`VirtualNode`). Everything in them
/// is read-only: what changes a document is done to the document, which a search folder
/// shows under its own inode.
extension SitefsFilesystem {
    static let searchFolderName = ".search"
    static let versionsFolderName = ".versions"
    /// How long the kernel may keep a search folder's entries: results change as documents
    /// do, so briefly.
    static let searchEntryTimeout = 1.0

    /// The virtual node a lookup in `parent` reaches by name, if it is one.
    func virtualChild(of parent: InodeNumber, named name: FileName) throws(Errno) -> VirtualNode? {
        if parent == .root {
            if name == FileName(Self.searchFolderName) { return .searchRoot }
            if name == FileName(Self.versionsFolderName) { return .versionsRoot }
            return nil
        }
        guard let node = virtual.nodes.node(parent) else {
            guard VirtualNodeTable.isVirtual(parent) else { return nil }
            throw .staleNFSFileHandle
        }
        let text = try serverName(name)
        switch node {
        case .searchRoot:
            return .searchFolder(name: text)
        case .searchFolder:
            return nil  // a real item (`virtualLookup`)
        case .versionsRoot:
            guard let site = try listing(of: nil).identifier(named: text) else { throw .noSuchFileOrDirectory }
            return .versionsMirror(site)
        case .versionsMirror(let folder):
            let item = try child(named: text, of: inodes.inode(for: folder))
            switch item.kind {
            case .site, .folder: return .versionsMirror(item.identifier)
            case .file: return .versionList(item.identifier)
            case .symlink: throw .noSuchFileOrDirectory
            }
        case .versionList(let file):
            guard let version = try versionListing(of: file, fresh: false).version(named: name) else { throw .noSuchFileOrDirectory }
            return .version(file: file, version: version.identifier)
        case .version:
            throw .notDirectory
        }
    }

    /// A lookup in a virtual folder, or of one at the root; nil when `parent` and `name` are
    /// ordinary.
    func virtualLookup(parent: InodeNumber, name: FileName) throws(Errno) -> Entry? {
        if case .searchFolder(let query)? = virtual.nodes.node(parent) {
            let outcome = searchOutcome(query, fresh: false)
            guard let hit = outcome.hit(entryNamed: name) else { throw .noSuchFileOrDirectory }
            let item = knownItem(hit.item.identifier) ?? hit.item
            var found = entry(for: item)
            found.entryTimeout = Self.searchEntryTimeout
            inodes.countLookup(found.attributes.inode)
            return found
        }
        guard let node = try virtualChild(of: parent, named: name) else { return nil }
        let found = try virtualEntry(node)
        virtual.nodes.countLookup(found.attributes.inode)
        return found
    }

    /// An entry for a virtual node; the caller counts the lookup.
    func virtualEntry(_ node: VirtualNode) throws(Errno) -> Entry {
        let inode = virtual.nodes.inode(for: node)
        let attributes = try virtualAttributes(node, inode: inode)
        let timeout = if case .searchFolder = node { Self.searchEntryTimeout } else { configuration.kernelCacheTimeout }
        return Entry(attributes: attributes, attributeTimeout: timeout, entryTimeout: timeout)
    }

    func virtualAttributes(_ node: VirtualNode, inode: InodeNumber) throws(Errno) -> FileAttributes {
        guard case .version(let file, let identifier) = node else {
            return FileAttributes(inode: inode, size: 4096, blocks: 8, mode: AttributeMapping.directoryType | 0o555, linkCount: 2,
                                  uid: configuration.uid, gid: configuration.gid,
                                  accessTime: startedAt, modificationTime: startedAt, changeTime: startedAt)
        }
        guard let version = try knownVersion(identifier, of: file) else { throw .noSuchFileOrDirectory }
        let size = UInt64(max(0, version.size))
        let time = AttributeMapping.timespec(version.modified)
        return FileAttributes(inode: inode, size: size, blocks: (size + 511) / 512, mode: AttributeMapping.regularType | 0o444,
                              linkCount: 1, uid: configuration.uid, gid: configuration.gid,
                              accessTime: time, modificationTime: time, changeTime: time)
    }

    /// A version as last listed, or as the server lists it now (one listed before may have
    /// been dropped from the answers kept, or be new since).
    func knownVersion(_ identifier: String, of file: ItemIdentifier) throws(Errno) -> ItemVersion? {
        if let known = virtual.versions(of: file, freshAt: nil)?.version(identifier) { return known }
        return try versionListing(of: file, fresh: true).version(identifier)
    }

    /// The node behind a virtual inode, or ESTALE for one the kernel was told to forget.
    func virtualNode(_ inode: InodeNumber) throws(Errno) -> VirtualNode {
        guard let node = virtual.nodes.node(inode) else { throw .staleNFSFileHandle }
        return node
    }

    func virtualOpenDirectory(_ node: VirtualNode) throws(Errno) -> HandleID {
        var entries: [VirtualFolders.Listing.Entry] = []
        switch node {
        case .searchRoot:
            break  // searches are looked up by name, never listed
        case .searchFolder(let query):
            for hit in searchOutcome(query, fresh: true).hits {
                guard let name = hit.entryName else { continue }
                entries.append(.init(name: name, node: .item(hit.item)))
            }
        case .versionsRoot:
            let sites = try listing(of: nil)
            for (name, site) in zip(sites.names, sites.identifiers) {
                entries.append(.init(name: name, node: .virtual(.versionsMirror(site))))
            }
        case .versionsMirror(let folder):
            let children = try listing(of: folder)
            for (name, identifier) in zip(children.names, children.identifiers) {
                guard let item = knownItem(identifier) else { continue }
                switch item.kind {
                case .site, .folder: entries.append(.init(name: name, node: .virtual(.versionsMirror(identifier))))
                case .file: entries.append(.init(name: name, node: .virtual(.versionList(identifier))))
                case .symlink: continue
                }
            }
        case .versionList(let file):
            let listing = try versionListing(of: file, fresh: true)
            for (name, version) in zip(listing.names, listing.versions) {
                entries.append(.init(name: name, node: .virtual(.version(file: file, version: version.identifier))))
            }
        case .version:
            throw .notDirectory
        }
        return virtual.open(VirtualFolders.Listing(entries: entries))
    }

    func virtualReadDirectory(_ inode: InodeNumber, handle: HandleID, offset: UInt64, plus: Bool,
                              emit: (DirectoryEntry) -> Bool) throws(Errno) {
        guard let listing = virtual.listing(handle) else { throw .badFileDescriptor }
        let dot = AttributeMapping.directoryType
        if offset < 1, !emit(DirectoryEntry(name: FileName("."), inode: inode, mode: dot, nextOffset: 1, entry: nil)) { return }
        if offset < 2, !emit(DirectoryEntry(name: FileName(".."), inode: .root, mode: dot, nextOffset: 2, entry: nil)) { return }
        var index = Int(max(offset, 2) - 2)
        while index < listing.entries.count {
            let listed = listing.entries[index]
            let next = UInt64(index + 3)
            switch listed.node {
            case .item(let hit):
                let item = knownItem(hit.identifier) ?? hit
                let number = inodes.inode(for: item.identifier)
                var found = plus ? entry(for: item, inode: number) : nil
                found?.entryTimeout = Self.searchEntryTimeout
                guard emit(DirectoryEntry(name: FileName(listed.name), inode: number, mode: AttributeMapping.fileType(of: item.kind),
                                          nextOffset: next, entry: found)) else { return }
                if plus { inodes.countLookup(number) }
            case .virtual(let node):
                let found = plus ? try? virtualEntry(node) : nil
                if plus && found == nil {
                    index += 1  // gone since the listing was made (a version no longer kept)
                    continue
                }
                let number = found?.attributes.inode ?? virtual.nodes.inode(for: node)
                guard emit(DirectoryEntry(name: FileName(listed.name), inode: number,
                                          mode: node.isDirectory ? dot : AttributeMapping.regularType,
                                          nextOffset: next, entry: found)) else { return }
                if plus { virtual.nodes.countLookup(number) }
            }
            index += 1
        }
    }

    /// A version opens read-only, read by range from the server like an online-only file,
    /// pinned to that version; its pages stay cached (a version never changes).
    func virtualOpen(_ node: VirtualNode, flags: Int32, context: RequestContext) throws(Errno) -> OpenReply {
        guard case .version(let file, let identifier) = node else { throw .isDirectory }
        guard flags & O_ACCMODE == O_RDONLY, flags & O_TRUNC == 0 else { throw .readOnlyFileSystem }
        guard let version = try knownVersion(identifier, of: file) else { throw .noSuchFileOrDirectory }
        if let item = knownItem(file) { try refuseBackgroundReader(context, item) }
        let reader = RemoteReader(identifier: file, version: version.identifier, size: version.size, backend: backend,
                                  maximumWindow: configuration.maximumReadAhead)
        return OpenReply(handle: handles.add(.remote(reader)), keepCache: true)
    }

    /// The attributes a search folder answers: its results (`sitefs search`).
    func virtualExtendedAttribute(_ node: VirtualNode, name: String) throws(Errno) -> [UInt8] {
        guard case .searchFolder(let query) = node else { throw .noData }
        if name == Self.searchResultsControl {
            return SearchResultsAnswer.page(of: searchOutcome(query, fresh: true), from: 0)
        }
        let prefix = Self.searchResultsControl + ":"
        guard name.hasPrefix(prefix), let start = Int(name.dropFirst(prefix.count)), start >= 0 else { throw .noData }
        return SearchResultsAnswer.page(of: virtual.lastSearch(query) ?? searchOutcome(query, fresh: false), from: start)
    }

    /// On a search folder: its results as JSON, a page at a time (`SearchResultsAnswer`).
    static let searchResultsControl = "user.sitefs.control.results"
}

extension SitefsFilesystem {
    /// EROFS for a change in a virtual folder (or of one), and for making something named
    /// like one at the root.
    func refuseVirtual(_ inode: InodeNumber, name: FileName? = nil) throws(Errno) {
        if VirtualNodeTable.isVirtual(inode) { throw .readOnlyFileSystem }
        if inode == .root, let name, name == FileName(Self.searchFolderName) || name == FileName(Self.versionsFolderName) {
            throw .readOnlyFileSystem
        }
    }
}
