import Foundation
import SitefsStore
import SitefsConcurrency
import SitefsSync
/// Tunables of a mount.
public struct FilesystemConfiguration: Sendable {
    /// Items per server page when listing a folder (`--page-size`).
    public var pageSize: Int
    /// Seconds the kernel may cache attributes and names before asking again.
    public var kernelCacheTimeout: Double
    /// How long listings and metadata are trusted without the server; the change feed keeps
    /// them current in between.
    public var metadataMaxAge: Duration
    /// How often the change feed is polled.
    public var changePollInterval: Duration
    /// Where the server can hold its answer until something changes (sitefs-server's
    /// long-poll), how long one request may wait; zero polls every `changePollInterval`
    /// instead (`--change-wait`).
    public var changeWait: Duration
    /// Owner shown for every item (the user who mounted).
    public var uid: UInt32
    public var gid: UInt32
    /// Mount read-only regardless of grants.
    public var readOnly: Bool
    /// The most a reader asks for in its first request at a new place in remote content
    /// (capped at 128 KiB: a `head` or a thumbnailer needs little); the rest of the file
    /// then streams in one request into a few chunks of memory (see `RemoteReader`).
    public var maximumReadAhead: Int
    /// How long a rename waits for the moved file's pending upload.
    public var uploadWaitForRename: Duration
    /// Which changes wait before they are sent, and how long (see `WriteBackDelays`): from
    /// `init`'s `writeBackDelay` (`--write-back-delay`: a document renamed to a backup name,
    /// `NAME~`, which vim and Emacs follow by writing the new `NAME`) and `newFileDelay`
    /// (`--new-file-delay`: a new file, which an editor may rename over the document it
    /// saves); other saves and renames go at once. Tests that need work held set it whole.
    public var writeBackDelays: WriteBackDelays
    /// How long a change made on the server at once (mkdir, rmdir, delete, rename of a
    /// folder) waits for the renames queued before it; past that it fails with EIO.
    public var namespaceWait: Duration
    /// While the server is unreachable, how often a request is let through to find it back
    /// (the rest fail at once; see `ConnectionMonitor`).
    public var offlineProbeInterval: Duration
    /// The most pinned content may take on disk (`--cache-size`); nil: no limit.
    public var cacheSizeLimit: Int64?
    /// What ages cached metadata: the system clock; a manual one in tests.
    public var clock: MountClock
    /// Where a save that no folder on the server would take is copied, so its owner finds it
    /// ($XDG_DATA_HOME/sitefs/rescued for the daemon); nil: it stays in staging only, for
    /// `sitefs retry`.
    public var rescueDirectory: String?
    /// The thumbnailers and indexers that get only content already on this device; the
    /// daemon's is `BackgroundReaders.standard()`, unless `--allow-background-reads`.
    public var backgroundReaders: ProcessMatcher = .none
    /// Where the daemon tells state changes (`StateChange`, a JSON line each) to the file
    /// manager's extension: a Unix socket, answered for `user.sitefs.events` on the mount
    /// root; nil: none.
    public var stateEventSocket: String?
    /// Where the server's pictures of online-only files are filed for the file manager
    /// (the freedesktop thumbnail cache); nil: nowhere.
    public var thumbnails: ThumbnailSettings?
    /// How long a lock for editing this mount takes lasts unless refreshed (it is, every
    /// third of it, while held): what a crashed mount's locks outlive it by.
    public var lockTimeout: Duration = .seconds(300)
    /// The name of this machine in the locks it takes (others see "locked by NAME on DEVICE").
    public var deviceName: String = ProcessInfo.processInfo.hostName
    /// The signed-in person as others see them in this mount's locks; the user name when nil.
    public var holderName: String?
    /// Whether a server file opened for writing is locked while open (`--no-lock-writers`
    /// leaves that to LibreOffice's lock files, which always lock).
    public var lockWriters = true

    public init(pageSize: Int = 200, kernelCacheTimeout: Double = 5, metadataMaxAge: Duration = .seconds(60),
                changePollInterval: Duration = .seconds(3), uid: UInt32, gid: UInt32, readOnly: Bool = false,
                maximumReadAhead: Int = 16 << 20, uploadWaitForRename: Duration = .seconds(60),
                writeBackDelay: Duration = .seconds(2), newFileDelay: Duration = .milliseconds(250), namespaceWait: Duration = .seconds(10),
                offlineProbeInterval: Duration = .seconds(1), cacheSizeLimit: Int64? = nil, changeWait: Duration = .zero,
                clock: MountClock = .system) {
        self.pageSize = pageSize
        self.kernelCacheTimeout = kernelCacheTimeout
        self.metadataMaxAge = metadataMaxAge
        self.changePollInterval = changePollInterval
        self.changeWait = changeWait
        self.uid = uid
        self.gid = gid
        self.readOnly = readOnly
        self.maximumReadAhead = maximumReadAhead
        self.uploadWaitForRename = uploadWaitForRename
        writeBackDelays = .editorAware(editorSequence: writeBackDelay, newFile: newFileDelay)
        self.namespaceWait = namespaceWait
        self.offlineProbeInterval = offlineProbeInterval
        self.cacheSizeLimit = cacheSizeLimit
        self.clock = clock
    }
}
