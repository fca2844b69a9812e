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
        case .renamed, .renameDropped, .restored, .foldersRemade, .journalTrouble: []
        }
    }
}

/// Where one item stands with the server, read in one step (`SyncEngine.state(of:)`).
public struct ItemSyncState: Sendable {
    /// A save is queued or being sent.
    public var hasPendingSave: Bool
    /// A save is being sent now.
    public var isUploading: Bool
    /// Its last save failed for good and nothing newer is queued.
    public var hasFailed: Bool
    /// A rename the mount shows is not on the server yet.
    public var hasPendingRename: Bool
    /// A new file whose create has started (or, resumed after a restart, may have reached the
    /// server, or has just finished): deleting or renaming it must wait for that create.
    public var mayBeOnServer: Bool

    /// Nothing of it is queued or being sent.
    public var isIdle: Bool { !hasPendingSave }
}

/// Why the engine refused a change: the core answers EIO (after the log line the engine
/// wrote) or maps the server's error.
public enum SyncError: Error, Sendable {
    /// The journal could not record it: not durable, so not done.
    case journal
    /// Renames made before it could not be sent in time; the change must not overtake them.
    case renamesPending
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

/// What removing a file comes to (`SyncEngine.removing`).
public enum Removal: Sendable {
    /// A new file that never reached the server: its saves are dropped; nothing to send.
    case discarded
    /// vim's save: the rename of the original is undone and the new file becomes a new
    /// version of it (the removed name is the renamed original's).
    case adopted(Adoption)
    /// A new file whose create may be on the server: wait for it (`settle`) and remove what
    /// it made.
    case awaitCreate
    /// A server file: deleted on the server at once (`changingOnServer(deleting:)`).
    case deleteOnServer
}

/// What renaming a file comes to (`SyncEngine.renaming`).
public enum RenameResult: Sendable {
    /// Shown at the new place now, sent after the settle delay (`item` as the mount shows it).
    /// `becameDocument`: a lock or temp name given a real one: the core saves its content.
    case moved(ProviderItem, becameDocument: Bool)
    /// A temp file saved over the original: one new version of it.
    case adopted(Adoption)
    /// A new file whose create started just now: wait for it (`settle`) and rename what it
    /// made. `restored`: the new file as the mount shows it again (nil once the create is
    /// reported and the server item stands for it).
    case awaitCreate(restored: ProviderItem?)
    /// Made on the server at once (`changingOnServer`): a folder, or a file over a server file.
    case onServer
}
