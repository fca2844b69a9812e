import SitefsProvider
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The filesystem core as the FUSE adapter sees it: one method per low-level FUSE request,
/// in Swift types only, so the core is testable without a kernel and the adapter is the
/// only code that touches libfuse.
///
/// Threading: the adapter calls these from its session worker threads, concurrently, and
/// may block in them (network I/O happens here); it replies to the kernel with whatever a
/// method returns or throws, exactly once. Errors are `Errno` values (ENOENT, EACCES, EIO,
/// ...) that go to the kernel as they are.
///
/// Lookup counting: every method that returns an `Entry` (lookup, create, mkdir, and each
/// entry of `readDirectory(plus: true)` that the adapter actually placed in the reply) has
/// counted one kernel reference to that inode; `forget` gives them back. The root inode
/// (`InodeNumber.root`) is never forgotten.
public protocol FilesystemOperations: AnyObject, Sendable {
    func lookup(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno) -> Entry
    func forget(_ inode: InodeNumber, lookups: UInt64)
    func attributes(of inode: InodeNumber, handle: HandleID?, context: RequestContext) throws(Errno) -> AttributesReply
    func setAttributes(of inode: InodeNumber, _ changes: AttributeChanges, handle: HandleID?, context: RequestContext) throws(Errno) -> AttributesReply

    func openDirectory(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> HandleID
    /// Emits entries from `offset` on. `offset` is 0 or the `nextOffset` of an entry emitted
    /// earlier on this handle. `emit` returns false when the kernel's buffer is full; that
    /// entry was not placed (and, with `plus`, not counted) and must come again next call.
    func readDirectory(_ inode: InodeNumber, handle: HandleID, offset: UInt64, plus: Bool, context: RequestContext,
                       emit: (DirectoryEntry) -> Bool) throws(Errno)
    func releaseDirectory(_ inode: InodeNumber, handle: HandleID)
    /// fsyncdir(2)'s request: what was removed from the folder survives a power cut once
    /// this returns (on a document server, every removal the mount has recorded).
    func syncDirectory(_ inode: InodeNumber, handle: HandleID) throws(Errno)

    func open(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> OpenReply
    func create(parent: InodeNumber, name: FileName, mode: UInt32, flags: Int32, context: RequestContext) throws(Errno) -> (Entry, OpenReply)
    /// Reads up to `size` bytes at `offset` into `buffer` (capacity >= size); returns the count (0 at EOF).
    func read(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int
    /// The same read, with the bytes lent until the adapter has replied (see `ReadLease`):
    /// what the adapter calls. By default `read(into:)` into a buffer of the lease's own.
    func lend(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int) throws(Errno) -> ReadLease
    func write(_ inode: InodeNumber, handle: HandleID, offset: Int64, data: UnsafeRawBufferPointer, flags: Int32) throws(Errno) -> Int
    func flush(_ inode: InodeNumber, handle: HandleID, context: RequestContext) throws(Errno)
    func release(_ inode: InodeNumber, handle: HandleID, flags: Int32)
    func fsync(_ inode: InodeNumber, handle: HandleID, dataOnly: Bool) throws(Errno)

    func makeDirectory(parent: InodeNumber, name: FileName, mode: UInt32, context: RequestContext) throws(Errno) -> Entry
    /// symlink(2): a link `name` in `parent` to `target` (bytes, kept as given).
    func makeSymlink(parent: InodeNumber, name: FileName, target: [UInt8], context: RequestContext) throws(Errno) -> Entry
    /// readlink(2): the link's target (EINVAL for anything but a link).
    func readLink(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [UInt8]
    func unlink(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno)
    func removeDirectory(parent: InodeNumber, name: FileName, context: RequestContext) throws(Errno)
    /// `flags`: RENAME_NOREPLACE (1) / RENAME_EXCHANGE (2) as renameat2 gives them.
    func rename(parent: InodeNumber, name: FileName, newParent: InodeNumber, newName: FileName, flags: UInt32,
                context: RequestContext) throws(Errno)
    func statistics(_ inode: InodeNumber) throws(Errno) -> FilesystemStatistics

    func getExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) -> [UInt8]
    func listExtendedAttributes(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [String]
    func setExtendedAttribute(_ inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext) throws(Errno)
    func removeExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno)

    /// The kernel finished `init`; `invalidator` pushes cache invalidations to it.
    func mounted(invalidator: any KernelCacheInvalidator)
    /// The session is ending (unmount or `destroy`).
    func unmounting()
}

extension FilesystemOperations {
    public func lend(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int) throws(Errno) -> ReadLease {
        try lendByReading(inode, handle: handle, offset: offset, size: size)
    }

    /// A lease of a buffer of its own, filled by `read`: for what has no bytes to lend.
    public func lendByReading(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int) throws(Errno) -> ReadLease {
        try ReadLease(capacity: size) { (buffer) throws(Errno) in
            try read(inode, handle: handle, offset: offset, size: size, into: buffer)
        }
    }
}

/// Lets the core tell the kernel to drop cached entries, attributes and page data when the
/// server reports changes. Call it from a background thread, never while handling a FUSE
/// request for the same directory (the kernel may wait on that request: deadlock).
public protocol KernelCacheInvalidator: Sendable {
    func invalidateEntry(parent: InodeNumber, name: FileName)
    /// `offset`/`length` 0/0 drops all cached pages; negative offset drops attributes only.
    func invalidateInode(_ inode: InodeNumber, offset: Int64, length: Int64)
}

public typealias InodeNumber = UInt64
public typealias HandleID = UInt64

extension InodeNumber {
    /// FUSE_ROOT_ID.
    public static let root: InodeNumber = 1
}

/// A name as the kernel gives it: bytes, not necessarily UTF-8.
public struct FileName: Hashable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }
    /// The name as text, or nil when it is not valid UTF-8.
    public var string: String? { String(validating: bytes, as: UTF8.self) }
    public var description: String { String(decoding: bytes, as: UTF8.self) }
}

/// Who asked (from `fuse_req_ctx`).
public struct RequestContext: Sendable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    /// Whether the caller has given up on this request (a signal reached the process that
    /// waits for it). Asked only while the request runs, on its own thread; operations that
    /// may wait long (an open that downloads) end with EINTR once it says so.
    public var interruption: Cancellation
    public init(uid: UInt32, gid: UInt32, pid: Int32, interruption: Cancellation = .never) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.interruption = interruption
    }

    /// For the adapter, which asks the kernel's word (FUSE_INTERRUPT) through `isInterrupted`.
    public init(uid: UInt32, gid: UInt32, pid: Int32, isInterrupted: @escaping @Sendable () -> Bool) {
        self.init(uid: uid, gid: gid, pid: pid, interruption: Cancellation(isInterrupted))
    }
}

/// `struct stat` fields the core decides. The adapter fills `st_blksize`, `st_dev` etc.
public struct FileAttributes: Sendable, Equatable {
    public var inode: InodeNumber
    public var size: UInt64
    /// 512-byte blocks allocated (`du` reads this; placeholders report their full size).
    public var blocks: UInt64
    /// File type bits and permission bits, as in `st_mode` (e.g. S_IFREG | 0o644).
    public var mode: UInt32
    public var linkCount: UInt32
    public var uid: UInt32
    public var gid: UInt32
    public var accessTime: TimeSpec
    public var modificationTime: TimeSpec
    public var changeTime: TimeSpec

    public init(inode: InodeNumber, size: UInt64, blocks: UInt64, mode: UInt32, linkCount: UInt32, uid: UInt32, gid: UInt32,
                accessTime: TimeSpec, modificationTime: TimeSpec, changeTime: TimeSpec) {
        self.inode = inode
        self.size = size
        self.blocks = blocks
        self.mode = mode
        self.linkCount = linkCount
        self.uid = uid
        self.gid = gid
        self.accessTime = accessTime
        self.modificationTime = modificationTime
        self.changeTime = changeTime
    }
}

public struct TimeSpec: Sendable, Equatable, Hashable {
    public var seconds: Int64
    public var nanoseconds: Int64
    public init(seconds: Int64, nanoseconds: Int64) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }
}

public struct AttributesReply: Sendable {
    public var attributes: FileAttributes
    /// Seconds the kernel may cache them.
    public var timeout: Double
    public init(attributes: FileAttributes, timeout: Double) {
        self.attributes = attributes
        self.timeout = timeout
    }
}

/// `fuse_entry_param`.
public struct Entry: Sendable {
    public var attributes: FileAttributes
    public var attributeTimeout: Double
    public var entryTimeout: Double
    public var generation: UInt64
    public init(attributes: FileAttributes, attributeTimeout: Double, entryTimeout: Double, generation: UInt64 = 0) {
        self.attributes = attributes
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
        self.generation = generation
    }
}

public struct OpenReply: Sendable {
    public var handle: HandleID
    /// Bypass the page cache (e.g. content that can change under the reader).
    public var directIO: Bool
    /// Keep pages cached from an earlier open (content known unchanged).
    public var keepCache: Bool
    /// A write-only handle: nothing can read or map through it, so its writes may go
    /// straight to the core instead of through the kernel's page cache. That saves a copy
    /// of every byte and the cache's memory (64 MiB for `cat` of 64 MiB into the mount),
    /// pages nobody reads back. The FUSE adapter honours it where the kernel keeps other
    /// handles' cached pages coherent with such writes.
    public var writesBypassCache: Bool
    /// Whether open(2) flags make a write-only handle (`writesBypassCache`).
    public static func isWriteOnly(_ flags: Int32) -> Bool { flags & O_ACCMODE == O_WRONLY }

    public init(handle: HandleID, directIO: Bool = false, keepCache: Bool = false, writesBypassCache: Bool = false) {
        self.handle = handle
        self.directIO = directIO
        self.keepCache = keepCache
        self.writesBypassCache = writesBypassCache
    }
}

public struct DirectoryEntry: Sendable {
    public var name: FileName
    public var inode: InodeNumber
    /// File type bits (S_IFDIR, S_IFREG) for plain readdir.
    public var mode: UInt32
    /// Offset of the entry after this one, for resuming.
    public var nextOffset: UInt64
    /// Full entry for readdirplus (nil for `.`/`..` and for plain readdir).
    public var entry: Entry?
    public init(name: FileName, inode: InodeNumber, mode: UInt32, nextOffset: UInt64, entry: Entry?) {
        self.name = name
        self.inode = inode
        self.mode = mode
        self.nextOffset = nextOffset
        self.entry = entry
    }
}

/// `setattr` changes; nil means unchanged.
public struct AttributeChanges: Sendable, Equatable {
    public var mode: UInt32?
    public var uid: UInt32?
    public var gid: UInt32?
    public var size: UInt64?
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?
    public init(mode: UInt32? = nil, uid: UInt32? = nil, gid: UInt32? = nil, size: UInt64? = nil,
                accessTime: TimeChange? = nil, modificationTime: TimeChange? = nil) {
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.size = size
        self.accessTime = accessTime
        self.modificationTime = modificationTime
    }
}

public enum TimeChange: Sendable, Equatable {
    case now
    case at(TimeSpec)
}

public struct FilesystemStatistics: Sendable {
    public var blockSize: UInt64
    public var blocks: UInt64
    public var freeBlocks: UInt64
    public var availableBlocks: UInt64
    public var files: UInt64
    public var freeFiles: UInt64
    public var maximumNameLength: UInt64
    public init(blockSize: UInt64, blocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64, files: UInt64,
                freeFiles: UInt64, maximumNameLength: UInt64) {
        self.blockSize = blockSize
        self.blocks = blocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks
        self.files = files
        self.freeFiles = freeFiles
        self.maximumNameLength = maximumNameLength
    }
}
