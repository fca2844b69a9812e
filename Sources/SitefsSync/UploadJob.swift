import SitefsAPI
import SitefsProvider
import SitefsStore

extension Uploader {
    typealias Job = SaveJob
    typealias Status = SyncStatus

    /// A rename of a server file made on the mount, applied to the server after the settle
    /// delay, so that an editor's "rename the original away, write a new one, delete the
    /// original" can still become a new version of the original instead.
    public struct RenameJob: Sendable, Equatable {
        public var identifier: ItemIdentifier
        /// Where the mount shows it.
        public var name: String
        public var parent: ItemIdentifier
        /// Where the server has it until this is applied.
        public var serverName: String
        public var serverParent: ItemIdentifier
        var notBefore: ContinuousClock.Instant = .now
        /// The last namespace operation made before this rename (its `sequence`; 0: none):
        /// the rename waits until that has reached the server, so the server sees both in
        /// the order they were made.
        var afterOperation: Int64 = 0

        public init(identifier: ItemIdentifier, name: String, parent: ItemIdentifier, serverName: String,
                    serverParent: ItemIdentifier) {
            self.identifier = identifier
            self.name = name
            self.parent = parent
            self.serverName = serverName
            self.serverParent = serverParent
        }

        /// True when applying it would change nothing.
        var isNoOp: Bool { ItemName.same(name, serverName) && parent == serverParent }
    }

    public enum Outcome: Sendable {
        /// A new version of the same item.
        case uploaded(Job, ProviderItem)
        /// A file created here now exists on the server as `item` (its local id is retired).
        case created(Job, ProviderItem)
        /// The server had moved on (412): its version keeps the name, the edit went to `copy`.
        case conflicted(Job, original: ProviderItem?, copy: ProviderItem)
        /// The item was deleted on the server: the edit was created again as `item`.
        case recreated(Job, ProviderItem)
        /// The server refused the save for good (`reason`): its content was created as `copy`,
        /// at `savedAs` in the mount ("Site/Folder/NAME (rescued ...).EXT"), so it is not lost.
        case rescued(Job, copy: ProviderItem, savedAs: String, reason: String)
        /// A verdict the uploader cannot resolve; the snapshot is kept for `sitefs retry` (and,
        /// when it is a refusal, copied into the rescue folder on this computer).
        case failed(Job, ProviderError)

        public var job: Job {
            switch self {
            case .uploaded(let job, _), .created(let job, _), .conflicted(let job, _, _), .recreated(let job, _),
                 .rescued(let job, _, _, _), .failed(let job, _):
                return job
            }
        }
    }

    /// How a deferred rename ended: applied (the item as the server now has it), or dropped
    /// (the error says why; the server keeps the item where it was).
    public enum RenameOutcome: Sendable {
        case renamed(RenameJob, ProviderItem)
        case dropped(RenameJob, ProviderError)
    }
}

/// One saved snapshot of a file waiting to reach the server: what the core hands the engine
/// on a save (`SyncEngine.saved`), and what the engine answers of a save not yet confirmed
/// (`ItemSyncState.latestSave`).
public struct SaveJob: Sendable {
    /// A local identifier (`ItemIdentifier.isLocal`) means the file is new: the upload
    /// creates it, in `parent` under `name`.
    public var identifier: ItemIdentifier
    /// For status lines, for creating a new file and for re-creating one that was deleted
    /// on the server.
    public var name: String
    /// The folder it was in when saved (creation, re-creation and conflict copies go there).
    public var parent: ItemIdentifier?
    /// Where `parent` stood on the mount when saved: made again on the server if it is gone
    /// there by the time the upload goes. Nil when not known (the content is then rescued).
    public var folders: FolderChain?
    public var stagedPath: String
    public var size: Int64
    /// The server version the edit started from: the upload is conditional on it.
    public var baseVersion: String?
    /// Applied after the upload (the server sets its own time on upload).
    public var modified: Timestamp?
    /// The file's mode, applied after the upload where the server's differs: a new file's
    /// (its creator's umask, or a chmod before it reached the server). Nil: the server's.
    public var mode: UInt16?
    /// The snapshot's bytes, for one of at most `journaledContentLimit`: the journal row
    /// keeps them, so the save is durable with the row's one commit, and neither the
    /// snapshot file nor the staging folder is fsynced (one disk flush per save, not
    /// three). At the next start a snapshot the disk lost is written again from the row.
    /// Dropped from the job once journaled: the queue never holds file content.
    public var content: [UInt8]?
    /// Its bytes are in its journal row (it was journaled with `content`): the row's
    /// confirmation then need not reach the disk before the snapshot goes (see
    /// `UploadJournal.confirmed`). Not persisted: a resumed row says so by its content.
    var contentInJournal = false
    /// Not uploaded before this (the settle delay): a save that is replaced, renamed over
    /// an existing file or deleted within it never costs an upload. Not persisted: a save
    /// resumed from the journal is due at once.
    var notBefore: ContinuousClock.Instant = .now
    /// An older snapshot of the same file, resumed from the journal together with this
    /// one: it may have been in flight when the last run ended, so the server may hold it
    /// with the answer lost. A 412 (or, for a new file, a name taken) where the server has
    /// exactly that snapshot is this mount's own earlier save, not someone else's edit.
    /// Its journal row and file stay until this job is done.
    var predecessor: Predecessor?
    /// Read back from the journal at start: it may have been in flight when the last run
    /// ended, so a newer save that replaces it keeps it as its `predecessor`, and a new
    /// file's create counts as possibly done (`mayBeOnServer`) until it is.
    var resumed = false

    struct Predecessor: Sendable {
        let stagedPath: String
        let size: Int64
    }

    public init(identifier: ItemIdentifier, name: String, parent: ItemIdentifier?, stagedPath: String, size: Int64,
                baseVersion: String?, modified: Timestamp?, folders: FolderChain? = nil, mode: UInt16? = nil,
                content: [UInt8]? = nil) {
        self.identifier = identifier
        self.name = name
        self.parent = parent
        self.folders = folders
        self.stagedPath = stagedPath
        self.size = size
        self.baseVersion = baseVersion
        self.modified = modified
        self.mode = mode
        self.content = content
    }

    /// The upload creates the file (it has never been on the server).
    public var createsFile: Bool { identifier.isLocal }

    /// The largest snapshot kept in its journal row (`content`): small files, as shell
    /// loops, `sed -i` and configuration saves make them; a larger one is fsynced where it
    /// lies, its flush costing less than writing it twice.
    public static let journaledContentLimit = 64 * 1024
}

/// An item's save state as `stat` reads it (`SyncEngine.shownSave(of:)`).
public struct PublishedSave: Sendable {
    /// The newest save recorded (queued, in flight or failed).
    public var latest: SaveJob
    /// Queued or being sent (not only failed), or on the server with the core not told yet.
    public var isPending: Bool
    /// On the server, its outcome being reported: `latest`'s snapshot may be gone (the
    /// content is the server's now), but the core still holds the metadata from before.
    public var isOnServer = false
}
