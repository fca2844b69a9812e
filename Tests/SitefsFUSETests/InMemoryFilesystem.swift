import Glibc
import SitefsCore
import Synchronization
import SystemPackage

/// A test-only `FilesystemOperations`: directories and byte files in memory, with the
/// bookkeeping the adapter tests assert on (lookup counts per inode, readdir/readdirplus
/// calls, forgets, mounted/unmounting) and knobs to make `open` fail with a chosen errno.
///
/// All state sits behind one mutex; the core is called concurrently from FUSE workers.
/// `readDirectory` calls `emit` outside the lock (it is the adapter's code) and counts a
/// readdirplus lookup only for entries `emit` accepted, as the contract requires.
final class InMemoryFilesystem: FilesystemOperations {
    struct Node {
        var attributes: FileAttributes
        var content: [UInt8] = []
        var children: [FileName: InodeNumber] = [:]
        var extendedAttributes: [String: [UInt8]] = [:]
        var openError: Errno?
        /// readDirectory throws EIO on reaching this listing offset.
        var listingFailsAt: UInt64?
        var isDirectory: Bool { attributes.mode & S_IFMT == S_IFDIR }
    }

    struct Counters: Sendable {
        var plainDirectoryReads = 0
        var plusDirectoryReads = 0
        var forgets = 0
        var forgetUnderflows = 0
        var mounted = 0
        var unmounting = 0
        var opens = 0
        var truncatingOpens = 0
        var releases = 0
        var largestWrite = 0
    }

    private struct Listing {
        var entries: [(name: FileName, inode: InodeNumber)]
    }

    private struct State {
        var nodes: [InodeNumber: Node] = [:]
        var nextInode: InodeNumber = 2
        var nextHandle: HandleID = 1
        var lookups: [InodeNumber: UInt64] = [:]
        var directoryHandles: [HandleID: Listing] = [:]
        var fileHandles: [HandleID: InodeNumber] = [:]
        var counters = Counters()
        var invalidator: (any KernelCacheInvalidator)?
    }

    /// Attribute and entry timeout handed to the kernel.
    let timeout: Double
    private let state: Mutex<State>

    init(timeout: Double = 1.0) {
        self.timeout = timeout
        var initial = State()
        initial.nodes[.root] = Node(attributes: Self.attributes(inode: .root, mode: S_IFDIR | 0o755, linkCount: 2))
        state = Mutex(initial)
    }

    // MARK: Test setup and inspection

    /// Creates the directories along `path` (relative to the root); returns the last one's inode.
    @discardableResult
    func makeDirectories(_ path: String) -> InodeNumber {
        state.withLock { state in
            var current = InodeNumber.root
            for component in path.split(separator: "/") {
                let name = FileName(String(component))
                if let existing = state.nodes[current]!.children[name] {
                    current = existing
                } else {
                    current = Self.insert(&state, parent: current, name: name, mode: S_IFDIR | 0o755)
                }
            }
            return current
        }
    }

    @discardableResult
    func addFile(_ path: String, contents: [UInt8], mode: UInt32 = 0o644) -> InodeNumber {
        let (directory, name) = Self.split(path)
        let parent = makeDirectories(directory)
        return state.withLock { state in
            let inode = Self.insert(&state, parent: parent, name: FileName(name), mode: S_IFREG | mode)
            state.nodes[inode]!.content = contents
            state.nodes[inode]!.attributes.size = UInt64(contents.count)
            state.nodes[inode]!.attributes.blocks = (UInt64(contents.count) + 511) / 512
            return inode
        }
    }

    func failOpen(_ path: String, with error: Errno) {
        state.withLock { state in
            guard let inode = Self.resolve(state, path) else { return }
            state.nodes[inode]!.openError = error
        }
    }

    func failListing(_ path: String, atOffset offset: UInt64) {
        state.withLock { state in
            guard let inode = Self.resolve(state, path) else { return }
            state.nodes[inode]!.listingFailsAt = offset
        }
    }

    func contents(_ path: String) -> [UInt8]? {
        state.withLock { state in Self.resolve(state, path).flatMap { state.nodes[$0]?.content } }
    }

    func inode(_ path: String) -> InodeNumber? {
        state.withLock { state in Self.resolve(state, path) }
    }

    var counters: Counters { state.withLock { $0.counters } }

    /// Lookup references the kernel holds, per inode, without zero entries.
    var outstandingLookups: [InodeNumber: UInt64] {
        state.withLock { state in state.lookups.filter { $0.value > 0 } }
    }

    var hasInvalidator: Bool { state.withLock { $0.invalidator != nil } }

    func invalidator() -> (any KernelCacheInvalidator)? { state.withLock { $0.invalidator } }

    // MARK: FilesystemOperations

    func lookup(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) -> Entry {
        try state.withLock { (state) throws(Errno) -> Entry in
            guard let directory = state.nodes[parent] else { throw .noSuchFileOrDirectory }
            guard directory.isDirectory else { throw .notDirectory }
            guard let inode = directory.children[name], let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            state.lookups[inode, default: 0] += 1
            return Self.entry(node, timeout)
        }
    }

    func forget(_ inode: InodeNumber, lookups: UInt64) {
        state.withLock { state in
            state.counters.forgets += 1
            let current = state.lookups[inode, default: 0]
            if current < lookups { state.counters.forgetUnderflows += 1 }
            state.lookups[inode] = current >= lookups ? current - lookups : 0
        }
    }

    func attributes(of inode: InodeNumber, handle: HandleID?, context: RequestContext) throws(Errno) -> AttributesReply {
        try state.withLock { (state) throws(Errno) -> AttributesReply in
            guard let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            return AttributesReply(attributes: node.attributes, timeout: timeout)
        }
    }

    func setAttributes(of inode: InodeNumber, _ changes: AttributeChanges, handle: HandleID?,
                       context: RequestContext) throws(Errno) -> AttributesReply {
        try state.withLock { (state) throws(Errno) -> AttributesReply in
            guard var node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            let now = Self.now()
            if let mode = changes.mode { node.attributes.mode = (node.attributes.mode & S_IFMT) | (mode & 0o7777) }
            if let uid = changes.uid { node.attributes.uid = uid }
            if let gid = changes.gid { node.attributes.gid = gid }
            if let size = changes.size {
                guard !node.isDirectory else { throw .isDirectory }
                Self.resize(&node, to: Int(size))
                node.attributes.modificationTime = now
            }
            if let time = changes.accessTime { node.attributes.accessTime = Self.resolve(time, now) }
            if let time = changes.modificationTime { node.attributes.modificationTime = Self.resolve(time, now) }
            node.attributes.changeTime = now
            state.nodes[inode] = node
            return AttributesReply(attributes: node.attributes, timeout: timeout)
        }
    }

    func openDirectory(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> HandleID {
        try state.withLock { (state) throws(Errno) -> HandleID in
            guard let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            guard node.isDirectory else { throw .notDirectory }
            let children = node.children.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
            let listing = Listing(entries: [(FileName("."), inode), (FileName(".."), inode)]
                + children.map { (name: $0.key, inode: $0.value) })
            let handle = state.nextHandle
            state.nextHandle += 1
            state.directoryHandles[handle] = listing
            return handle
        }
    }

    func readDirectory(_ inode: InodeNumber, handle: HandleID, offset: UInt64, plus: Bool, context: RequestContext,
                       emit: (DirectoryEntry) -> Bool) throws(Errno) {
        let (pending, failsAt) = try state.withLock { (state) throws(Errno) -> ([DirectoryEntry], UInt64?) in
            guard let listing = state.directoryHandles[handle] else { throw .badFileDescriptor }
            let failsAt = state.nodes[inode]?.listingFailsAt
            if plus { state.counters.plusDirectoryReads += 1 } else { state.counters.plainDirectoryReads += 1 }
            guard offset < UInt64(listing.entries.count) else { return ([], failsAt) }
            return (listing.entries[Int(offset)...].enumerated().compactMap { index, item in
                guard let node = state.nodes[item.inode] else { return nil }
                let isDot = item.name == FileName(".") || item.name == FileName("..")
                return DirectoryEntry(name: item.name, inode: item.inode, mode: node.attributes.mode & S_IFMT,
                                      nextOffset: offset + UInt64(index) + 1,
                                      entry: plus && !isDot ? Self.entry(node, timeout) : nil)
            }, failsAt)
        }
        for entry in pending {
            if let failsAt, entry.nextOffset > failsAt { throw .ioError }
            guard emit(entry) else { return }
            if let counted = entry.entry {
                state.withLock { $0.lookups[counted.attributes.inode, default: 0] += 1 }
            }
        }
    }

    func releaseDirectory(_ inode: InodeNumber, handle: HandleID) {
        _ = state.withLock { $0.directoryHandles.removeValue(forKey: handle) }
    }

    func open(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> OpenReply {
        try state.withLock { (state) throws(Errno) -> OpenReply in
            guard var node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            if let error = node.openError { throw error }
            guard !node.isDirectory else { throw .isDirectory }
            if flags & O_TRUNC != 0 {   // FUSE_CAP_ATOMIC_O_TRUNC: truncation comes with open
                state.counters.truncatingOpens += 1
                Self.resize(&node, to: 0)
                state.nodes[inode] = node
            }
            state.counters.opens += 1
            // As the sitefs core does: a write-only handle's writes may skip the page cache.
            return OpenReply(handle: Self.newFileHandle(&state, inode), writesBypassCache: OpenReply.isWriteOnly(flags))
        }
    }

    func create(parent: InodeNumber, name: FileName, mode: UInt32, flags: Int32,
                context: RequestContext) throws(Errno) -> (Entry, OpenReply) {
        try state.withLock { (state) throws(Errno) -> (Entry, OpenReply) in
            guard let directory = state.nodes[parent], directory.isDirectory else { throw .notDirectory }
            guard directory.children[name] == nil else { throw .fileExists }
            let inode = Self.insert(&state, parent: parent, name: name, mode: S_IFREG | (mode & 0o7777),
                                    uid: context.uid, gid: context.gid)
            state.lookups[inode, default: 0] += 1
            state.counters.opens += 1
            return (Self.entry(state.nodes[inode]!, timeout),
                    OpenReply(handle: Self.newFileHandle(&state, inode), writesBypassCache: OpenReply.isWriteOnly(flags)))
        }
    }

    func read(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int,
              into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try state.withLock { (state) throws(Errno) -> Int in
            guard state.fileHandles[handle] == inode, let node = state.nodes[inode] else { throw .badFileDescriptor }
            guard offset < Int64(node.content.count) else { return 0 }
            let start = Int(offset)
            let count = min(size, node.content.count - start)
            node.content.withUnsafeBytes { source in
                buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count)
            }
            return count
        }
    }

    func write(_ inode: InodeNumber, handle: HandleID, offset: Int64, data: UnsafeRawBufferPointer,
               flags: Int32) throws(Errno) -> Int {
        try state.withLock { (state) throws(Errno) -> Int in
            guard state.fileHandles[handle] == inode, var node = state.nodes[inode] else { throw .badFileDescriptor }
            let end = Int(offset) + data.count
            if end > node.content.count { Self.resize(&node, to: end) }
            node.content.replaceSubrange(Int(offset)..<end, with: data)
            node.attributes.modificationTime = Self.now()
            state.nodes[inode] = node
            state.counters.largestWrite = max(state.counters.largestWrite, data.count)
            return data.count
        }
    }

    func flush(_ inode: InodeNumber, handle: HandleID, context: RequestContext) throws(Errno) {}

    func release(_ inode: InodeNumber, handle: HandleID, flags: Int32) {
        state.withLock { state in
            state.fileHandles.removeValue(forKey: handle)
            state.counters.releases += 1
        }
    }

    func fsync(_ inode: InodeNumber, handle: HandleID, dataOnly: Bool) throws(Errno) {}
    func syncDirectory(_ inode: InodeNumber, handle: HandleID) throws(Errno) {}

    /// Links are not part of what these adapter tests exercise.
    func makeSymlink(parent: InodeNumber, name: FileName, target: [UInt8], context: RequestContext) throws(Errno) -> Entry {
        throw .notPermitted
    }

    func readLink(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [UInt8] {
        throw .invalidArgument
    }

    func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry {
        try state.withLock { (state) throws(Errno) -> Entry in
            guard let directory = state.nodes[parent], directory.isDirectory else { throw .notDirectory }
            guard directory.children[name] == nil else { throw .fileExists }
            let inode = Self.insert(&state, parent: parent, name: name, mode: S_IFDIR | (mode & 0o7777),
                                    uid: context.uid, gid: context.gid)
            state.lookups[inode, default: 0] += 1
            return Self.entry(state.nodes[inode]!, timeout)
        }
    }

    func unlink(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        try state.withLock { (state) throws(Errno) in
            guard let inode = state.nodes[parent]?.children[name], let node = state.nodes[inode] else {
                throw .noSuchFileOrDirectory
            }
            guard !node.isDirectory else { throw .isDirectory }
            state.nodes[parent]!.children[name] = nil
            state.nodes[inode]!.attributes.linkCount = 0
        }
    }

    func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) {
        try state.withLock { (state) throws(Errno) in
            guard let inode = state.nodes[parent]?.children[name], let node = state.nodes[inode] else {
                throw .noSuchFileOrDirectory
            }
            guard node.isDirectory else { throw .notDirectory }
            guard node.children.isEmpty else { throw .directoryNotEmpty }
            state.nodes[parent]!.children[name] = nil
            state.nodes[parent]!.attributes.linkCount -= 1
            state.nodes[inode]!.attributes.linkCount = 0
        }
    }

    func rename(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName, flags: UInt32,
                context: RequestContext) throws(Errno) {
        try state.withLock { (state) throws(Errno) in
            guard let inode = state.nodes[parent]?.children[name] else { throw .noSuchFileOrDirectory }
            guard let target = state.nodes[newParent], target.isDirectory else { throw .notDirectory }
            let existing = target.children[newName]
            if flags & 1 != 0, existing != nil { throw .fileExists }          // RENAME_NOREPLACE
            if flags & 2 != 0 {                                               // RENAME_EXCHANGE
                guard let existing else { throw .noSuchFileOrDirectory }
                state.nodes[parent]!.children[name] = existing
                state.nodes[newParent]!.children[newName] = inode
                return
            }
            if let existing, let replaced = state.nodes[existing] {
                if replaced.isDirectory && !replaced.children.isEmpty { throw .directoryNotEmpty }
                if replaced.isDirectory != state.nodes[inode]!.isDirectory {
                    throw replaced.isDirectory ? .isDirectory : .notDirectory
                }
            }
            state.nodes[parent]!.children[name] = nil
            state.nodes[newParent]!.children[newName] = inode
        }
    }

    static let statistics = FilesystemStatistics(blockSize: 4096, blocks: 1_000_000, freeBlocks: 600_000,
                                                 availableBlocks: 500_000, files: 100_000, freeFiles: 90_000,
                                                 maximumNameLength: 255)

    func statistics(_ inode: InodeNumber) throws(Errno) -> FilesystemStatistics {
        Self.statistics
    }

    func getExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) -> [UInt8] {
        try state.withLock { (state) throws(Errno) -> [UInt8] in
            guard let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            guard let value = node.extendedAttributes[name] else { throw .noData }
            return value
        }
    }

    func listExtendedAttributes(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [String] {
        try state.withLock { (state) throws(Errno) -> [String] in
            guard let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            return node.extendedAttributes.keys.sorted()
        }
    }

    func setExtendedAttribute(_ inode: InodeNumber, name: String, value: [UInt8], flags: Int32,
                              context: RequestContext) throws(Errno) {
        try state.withLock { (state) throws(Errno) in
            guard let node = state.nodes[inode] else { throw .noSuchFileOrDirectory }
            let exists = node.extendedAttributes[name] != nil
            if flags & 1 != 0, exists { throw .fileExists }      // XATTR_CREATE
            if flags & 2 != 0, !exists { throw .noData }         // XATTR_REPLACE
            state.nodes[inode]!.extendedAttributes[name] = value
        }
    }

    func removeExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) {
        try state.withLock { (state) throws(Errno) in
            guard state.nodes[inode]?.extendedAttributes.removeValue(forKey: name) != nil else { throw .noData }
        }
    }

    func mounted(invalidator: any KernelCacheInvalidator) {
        state.withLock { state in
            state.invalidator = invalidator
            state.counters.mounted += 1
        }
    }

    func unmounting() {
        state.withLock { state in
            state.invalidator = nil
            state.counters.unmounting += 1
        }
    }

    // MARK: Helpers (called with the lock held)

    private static func insert(_ state: inout State, parent: InodeNumber, name: FileName, mode: UInt32,
                               uid: UInt32 = 0, gid: UInt32 = 0) -> InodeNumber {
        let inode = state.nextInode
        state.nextInode += 1
        let isDirectory = mode & S_IFMT == S_IFDIR
        var attributes = attributes(inode: inode, mode: mode, linkCount: isDirectory ? 2 : 1)
        attributes.uid = uid
        attributes.gid = gid
        state.nodes[inode] = Node(attributes: attributes)
        state.nodes[parent]!.children[name] = inode
        if isDirectory { state.nodes[parent]!.attributes.linkCount += 1 }
        return inode
    }

    private static func newFileHandle(_ state: inout State, _ inode: InodeNumber) -> HandleID {
        let handle = state.nextHandle
        state.nextHandle += 1
        state.fileHandles[handle] = inode
        return handle
    }

    private static func resize(_ node: inout Node, to size: Int) {
        if size < node.content.count {
            node.content.removeSubrange(size...)
        } else {
            node.content.append(contentsOf: repeatElement(0, count: size - node.content.count))
        }
        node.attributes.size = UInt64(size)
        node.attributes.blocks = (UInt64(size) + 511) / 512
    }

    private static func resolve(_ state: State, _ path: String) -> InodeNumber? {
        var current = InodeNumber.root
        for component in path.split(separator: "/") {
            guard let next = state.nodes[current]?.children[FileName(String(component))] else { return nil }
            current = next
        }
        return current
    }

    private static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    private static func entry(_ node: Node, _ timeout: Double) -> Entry {
        Entry(attributes: node.attributes, attributeTimeout: timeout, entryTimeout: timeout)
    }

    private static func attributes(inode: InodeNumber, mode: UInt32, linkCount: UInt32) -> FileAttributes {
        let now = now()
        return FileAttributes(inode: inode, size: mode & S_IFMT == S_IFDIR ? 4096 : 0, blocks: 0, mode: mode,
                              linkCount: linkCount, uid: 0, gid: 0, accessTime: now, modificationTime: now,
                              changeTime: now)
    }

    private static func resolve(_ change: TimeChange, _ now: TimeSpec) -> TimeSpec {
        switch change {
        case .now: now
        case .at(let time): time
        }
    }

    static func now() -> TimeSpec {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return TimeSpec(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }
}
