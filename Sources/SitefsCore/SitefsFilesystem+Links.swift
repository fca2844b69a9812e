import SitefsAPI
import SitefsProvider
import SitefsSync
import SystemPackage
import Synchronization

/// Symbolic links: made like a folder (on the server now, or journaled and shown at once
/// when it cannot take it), read from the item's target, or (a WebDAV `.rclonelink`
/// listed without it) from the link's content, once; renamed and removed as files are.
extension SitefsFilesystem {
    public func makeSymlink(parent: InodeNumber, name: FileName, target: [UInt8], context: RequestContext) throws(Errno) -> Entry {
        try refuseVirtual(parent, name: name)
        let folder = try writableFolder(parent)
        let linkName = try serverName(name)
        if let violation = ItemName.violation(of: linkName) {
            logger.warning("symlink \(linkName.debugDescription): the server would refuse this name (\(violation))")
            throw .invalidArgument
        }
        // symlink(2): an empty target is ENOENT; one longer than PATH_MAX is ENAMETOOLONG.
        guard !target.isEmpty else { throw .noSuchFileOrDirectory }
        guard target.count <= ProviderItem.maximumSymlinkTarget else { throw .fileNameTooLong }
        guard ProviderItem.isValidSymlinkTarget(target) else { throw .invalidArgument }
        if try listing(of: folder.identifier).identifier(named: linkName) != nil { throw .fileExists }
        let outcome: NamespaceOutcome
        do throws(SyncError) {
            outcome = try sync.apply(.makeSymlink(named: linkName, in: folder.identifier, target: target))
        } catch {
            throw errorNumber(for: error, "symlink \(linkName)", listings: folder.identifier)
        }
        var item: ProviderItem
        switch outcome {
        case .sent(let made?), .queued(let made?, _):
            item = made
        default:
            logger.error("symlink \(linkName): the sync engine made no link")
            throw .ioError
        }
        if item.symlinkTarget == nil { item.symlinkTarget = target }  // what was asked is what it holds
        cache.upsert(item)
        localTimes.entriesChanged(folder.identifier, now: Self.now())
        recordMaker(of: inodes.inode(for: item.identifier), context: context)
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return entry
    }

    public func readLink(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [UInt8] {
        if VirtualNodeTable.isVirtual(inode) { throw .invalidArgument }
        let item = try currentItem(try identifier(of: inode))
        guard item.kind == .symlink else { throw .invalidArgument }
        if let target = item.symlinkTarget { return target }
        let target = try fetchTarget(of: item, interruption: context.interruption)
        var known = item
        known.symlinkTarget = target
        cache.upsertIfKnown(known)
        return target
    }

    /// A link's target read from its content (at most the longest target; anything else
    /// there is a server's error, said as EIO).
    private func fetchTarget(of item: ProviderItem, interruption: Cancellation) throws(Errno) -> [UInt8] {
        let received = Mutex<[UInt8]>([])
        let sink = ContentSink.pieces(limit: ProviderItem.maximumSymlinkTarget) { piece in
            received.withLock { $0.append(contentsOf: piece) }
        }
        do {
            _ = try backend.fetchContent(of: item.identifier, version: nil, range: nil, ifNoneMatch: nil, into: sink,
                                         cancellation: interruption)
        } catch {
            throw handle(error, "readlink \(item.name)", dropping: item.identifier)
        }
        let target = received.withLock { $0 }
        guard ProviderItem.isValidSymlinkTarget(target) else {
            logger.warning("readlink \(item.name): the server's link holds no valid target (\(target.count) bytes)")
            throw .ioError
        }
        return target
    }

    static func now() -> TimeSpec { AttributeMapping.timespec(.now()) }
}
