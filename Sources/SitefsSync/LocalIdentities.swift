import SitefsAPI
import SitefsProvider

/// How an item made on the mount changes identity when the server gets it: the one owner of
/// the local → server mapping, and the one place that describes the whole way.
///
/// 1. **Made here.** A new file or a folder made offline gets a local identifier
///    (`ItemIdentifier.local(in:)`, `isLocal`), shown through `LocalNamespace.addCreated`.
///    Its save (`SaveJob.createsFile`) or mkdir (`NamespaceOperation.makeFolder`) is
///    journaled under that identifier; saves and renames into a local folder carry it as
///    their parent.
/// 2. **Sent.** A new file's create waits while a rename or a folder operation is pending
///    (one may free its name or make its folder); a save, rename or operation whose parent
///    is a local folder asks `folder(_:mkdirPending:)`: `.ready(server)` once the mkdir went
///    (the parent is rewritten, and journaled), `.waiting` while it is queued, `.abandoned`
///    when it failed for good or was dropped.
/// 3. **Made there.** A file's create ends in `Uploader.settleCreation`: `retire` records
///    local → (server identifier, version), the journal row is confirmed with a newer save
///    of the file rekeyed to the server item in the same transaction. A mkdir ends in
///    `Uploader.finishOperation`: `folderMade` records local → server (journaled with the
///    operation's end, `made_folders`, so a restart still resolves it), and everything still
///    aimed at the local folder is retargeted.
/// 4. **Shown.** `SyncEngine.report` takes the item out of `LocalNamespace` and sends
///    `SyncEvent.replaced(local, by: serverItem)`; the core rebinds the inode to the server
///    identifier (`InodeTable.rebind`), moves the open copy (`rekeyCopy`) and the cache
///    entry, and for a folder shows its children under it. The inode number never changes,
///    so open handles and the kernel's dentries stay valid.
/// 5. **Late callers.** A caller that looked the local identifier up just before step 4 (a
///    rename, a delete, a save racing the report) comes with it afterwards: `created(_:)`
///    answers what the server made of it, and the uploader acts on that. Retired entries go
///    after `kept` (a mount that runs for months must not keep one per file it created);
///    folder mappings stay as long as the journal has them.
///
/// A value guarded by the uploader's `condition`; no I/O.
struct LocalIdentities {
    /// Folders made here that the server has now: local identifier -> server identifier.
    private(set) var madeFolders: [ItemIdentifier: ItemIdentifier]
    /// Folders made here whose mkdir failed for good or was dropped: what was to go into
    /// them fails too.
    private(set) var abandonedFolders: Set<ItemIdentifier> = []
    /// New files whose create has finished, by their retired local identifier.
    private var retired: [ItemIdentifier: (identifier: ItemIdentifier, version: String)] = [:]
    /// When each of `retired` was added, oldest first; the same keys as `retired`.
    private var retirements: [(identifier: ItemIdentifier, at: ContinuousClock.Instant)] = []
    /// How long a retired creation is remembered.
    let kept: Duration

    init(madeFolders: [ItemIdentifier: ItemIdentifier] = [:], kept: Duration) {
        self.madeFolders = madeFolders
        self.kept = kept
    }

    /// Where the folder a save, rename or operation goes into stands. `mkdirPending`: its
    /// mkdir is queued or being sent.
    func folder(_ folder: ItemIdentifier, mkdirPending: Bool) -> Uploader.FolderResolution {
        guard folder.isLocal else { return .ready(folder) }
        if let made = madeFolders[folder] { return .ready(made) }
        if abandonedFolders.contains(folder) { return .abandoned }
        return mkdirPending ? .waiting : .abandoned
    }

    mutating func folderMade(_ local: ItemIdentifier, as server: ItemIdentifier) { madeFolders[local] = server }

    mutating func abandonFolder(_ local: ItemIdentifier) { abandonedFolders.insert(local) }

    /// A new file's create made `created` at `now`; records older than `kept` go.
    mutating func retire(_ local: ItemIdentifier, as created: (identifier: ItemIdentifier, version: String),
                         at now: ContinuousClock.Instant) {
        let expired = retirements.prefix { now - $0.at > kept }.count
        for retirement in retirements.prefix(expired) { retired[retirement.identifier] = nil }
        retirements.removeFirst(expired)
        retired[local] = created
        retirements.append((local, now))
    }

    /// What the server made of a new file whose create has finished (within `kept`).
    func created(_ local: ItemIdentifier) -> (identifier: ItemIdentifier, version: String)? { retired[local] }
}
