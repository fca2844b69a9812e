import SitefsAPI
import SitefsProvider

/// What reached the server (or could not), as the engine tells the core. Items are given as
/// the mount shows them (`SyncEngine.view` applied).
public enum SyncEvent: Sendable {
    /// A save became a new version of the item; `basedOn` is the version the save started from
    /// (an open copy still on that base now stands on the new one).
    case uploaded(ProviderItem, basedOn: String?)
    /// The server had moved on: its version of the item keeps the name (`original`, when it
    /// could be read) and the edit went to `copy`.
    case conflicted(ItemIdentifier, original: ProviderItem?, copy: ProviderItem)
    /// What the mount knew as `former` (a new file's local identifier, or a file deleted on
    /// the server and created again) is now the server item `by`: inodes and open copies
    /// follow it.
    case replaced(ItemIdentifier, by: ProviderItem)
    /// A save the engine cannot resolve: kept for `sitefs retry`.
    case failed(ItemIdentifier)
    /// The server refused a save for good (`reason`); its content is `copy`, at `savedAs`
    /// ("Site/Folder/NAME (rescued ...).EXT"). A file only here (a local identifier) became
    /// that copy; a server file keeps its version and name.
    case rescued(ItemIdentifier, copy: ProviderItem, savedAs: String, reason: String)
    /// Folders deleted on the server were made again there because something was saved into
    /// them here; what goes into them follows in its own event.
    case foldersRemade(FoldersRemade)
    /// A deferred rename reached the server; `requested` is where the user put the item (the
    /// server may have answered with another name).
    case renamed(ProviderItem, requested: (parent: ItemIdentifier, name: String))
    /// A deferred rename was refused: the server keeps the item in `serverParent` (`gone`:
    /// the item itself is gone), so what the mount showed at `shown` is no longer true.
    case renameDropped(ItemIdentifier, shown: (parent: ItemIdentifier, name: String), serverParent: ItemIdentifier,
                       gone: Bool)
    /// A delete or folder removal made offline that the server did not take (someone changed
    /// or filled the item meanwhile): the item, which was in `parent` as `name`, is shown
    /// again.
    case restored(ItemIdentifier, parent: ItemIdentifier?, name: String)
    /// A delete or folder removal made offline reached the server. The item stays hidden
    /// until the core has handled this (dropped it again from its cache, which makes any
    /// listing asked for before the server deleted it, and answered after, stale): only
    /// then does the engine stop hiding it.
    case removed(ItemIdentifier)
    /// The upload journal cannot be written (`problem` says why; see `JournalWrite`), or can
    /// again (nil): the user is to be told, since new saves fail meanwhile.
    case journalTrouble(String?)

    /// Where the local copy the saved content came from may be found once the core has
    /// applied this (the first that exists): it may be done with now. None for renames.
    public var savedCopyCandidates: [ItemIdentifier] {
        switch self {
        case .uploaded(let item, _): [item.identifier]
        case .conflicted(let identifier, _, let copy): [copy.identifier, identifier]
        case .replaced(let former, let item): [item.identifier, former]
        case .failed(let identifier): [identifier]
        case .rescued(let identifier, let copy, _, _): [copy.identifier, identifier]
        case .renamed, .renameDropped, .restored, .removed, .foldersRemade, .journalTrouble: []
        }
    }
}

/// Where one item stands, read by `SyncEngine.state(of:reading:)`: only the parts asked for
/// are filled in (the rest keep their defaults), each read in one step under its own lock.
public struct ItemSyncState: Sendable {
    /// Which parts to read, and the lock each takes.
    public struct Parts: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Saves, renames and folder operations queued, in flight or failed: the uploader's
        /// queue lock, which is held across some journal commits (never ask it for `stat`).
        public static let queue = Parts(rawValue: 1)
        /// What the mount shows made, removed or moved here: the namespace's mutex.
        public static let namespace = Parts(rawValue: 2)
        /// The newest save not confirmed by the server: the published save states only, so
        /// `stat` and `open` never wait for an fsync.
        public static let shown = Parts(rawValue: 4)
        public static let all: Parts = [.queue, .namespace, .shown]
    }

    // `.queue`
    /// A save is queued or being sent.
    public var hasPendingSave: Bool
    /// A save is being sent now.
    public var isUploading: Bool
    /// Its last save failed for good and nothing newer is queued.
    public var hasFailed: Bool
    /// A rename or folder operation the mount shows is not on the server yet.
    public var hasPendingRename: Bool
    /// A new file whose create has started (or, resumed after a restart, may have reached the
    /// server, or has just finished): deleting or renaming it must wait for that create.
    public var mayBeOnServer: Bool

    // `.namespace`
    /// A file or folder made here and not on the server yet, as the mount shows it.
    public var created: ProviderItem? = nil
    /// Removed here, its removal not on the server yet: gone, whatever the server says.
    public var isRemoved = false
    /// For a folder: a server listing of it would not show what the mount shows.
    public var changesListing = false

    // `.shown`
    /// The newest save not yet confirmed by the server (queued, in flight or failed): after a
    /// restart the file's size and content are this save's, not the server's.
    public var shownSave: PublishedSave? = nil

    /// Nothing of it is queued or being sent (`.queue`).
    public var isIdle: Bool { !hasPendingSave }
}

/// Why the engine refused a change: the core answers EIO (after the log line the engine
/// wrote), EPERM, or maps the server's error.
public enum SyncError: Error, Sendable {
    /// The journal could not record it: not durable, so not done.
    case journal
    /// Renames made before it could not be sent in time; the change must not overtake them.
    case renamesPending
    /// A file renamed over another on the server at once: its own save did not reach the
    /// server in time, and the rename must not overtake it.
    case uploadPending
    /// The item does not allow it (a server item without the capability, a site).
    case notPermitted
    /// The server refused or did not answer.
    case server(ProviderError)
}

/// A new file taking the place of a server file (a temp file renamed over the original, or
/// vim's write-new-then-delete-the-renamed-original): its content becomes a new version of
/// `item`. The core moves the new file's inode and open copy to `item`.
public struct Adoption: Sendable {
    /// The new file's local identifier, which goes.
    public var former: ItemIdentifier
    /// The server item it became, with the version its new content is based on (a copy the
    /// core moves over takes this as its base).
    public var item: ProviderItem
    /// The server item as the mount shows it now.
    public var shown: ProviderItem
}

/// A change of the mount's folder tree, as the core hands it to `SyncEngine.apply`. The core
/// has checked names, kinds and emptiness; the engine decides what it comes to.
public enum NamespaceChange: Sendable {
    /// A new file (a local identifier): shown from now on, created on the server by its first
    /// upload.
    case createFile(ProviderItem)
    /// mkdir `name` in `folder`.
    case makeFolder(named: String, in: ItemIdentifier)
    /// unlink of a file, or rmdir of an empty folder.
    case remove(ProviderItem)
    /// A file or folder renamed to `name` in `folder` (the same site), replacing the file
    /// `replacing` there (a folder there is removed first, with `.remove`; a file made here
    /// too).
    case rename(ProviderItem, to: ItemIdentifier, named: String, replacing: ProviderItem?)
    /// chmod of a file or folder (not a site): `mode`, within `ProviderItem.permissionBits`.
    case setMode(ProviderItem, mode: UInt16)
    /// symlink `name` in `folder` to `target` (valid by `ProviderItem.isValidSymlinkTarget`).
    case makeSymlink(named: String, in: ItemIdentifier, target: [UInt8])
}

/// What a namespace change came to (`SyncEngine.apply`).
public enum NamespaceOutcome: Sendable {
    /// Made on the server now. `item`: as the server has it now (mkdir, rename: for a rename
    /// over a file, the destination's identifier, which survives with the source's content);
    /// nil for a removal.
    case sent(ProviderItem?)
    /// Shown now as `item` (nil for a removal), sent when it can be (see "Now or later" at
    /// `SyncEngine`); a rename over a file removes that file first, the same way.
    /// `becameDocument`: a lock or temp name given a real one; the core saves its content.
    case queued(ProviderItem?, becameDocument: Bool = false)
    /// Something made here that never reached the server is gone with nothing to send.
    case discarded
    /// A new file took the place of a server file: one new version of it (vim's save when
    /// removing the renamed original, a temp file renamed over the original).
    case adopted(Adoption)
    /// Made here, its create on the server started just now: wait for it (`settle`) and
    /// apply the change to what it made. `restored`: the item as the mount shows it again
    /// (nil once the create is reported and the server item stands for it).
    case awaitingCreate(restored: ProviderItem?)
}

/// A change of the pins (`SyncEngine.changePins`).
public enum PinChange: Sendable {
    /// The item (a folder: with what comes under it) is kept on this device.
    case pin(ItemIdentifier)
    case unpin(ItemIdentifier)
    /// The item's local copy is `Kept` (its file fsynced first).
    case keep(ItemIdentifier, PinRegistry.Kept)
    /// The item's local copy is about to change, or goes (a no-op without a record).
    case forgetKept(ItemIdentifier)
}
