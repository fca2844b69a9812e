import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import Synchronization
import SystemPackage
import SitefsConcurrency

/// The filesystem core: the File Provider model over inodes.
///
/// The mount root lists the user's sites; every other directory is a server folder listed
/// page by page; files are placeholders described by metadata until opened. Network calls
/// are made on the calling FUSE worker thread and never under any lock.
///
/// Lock order (a lock may be taken while holding only locks above it):
/// 1. `copies`, the registry of local copies: held to find, add or remove one.
/// 2. A `LocalCopy`'s `condition`: held to read or change the copy's fields, never across
///    the network, staging, an fsync or a journal commit. `save` marks the copy `saving`
///    and stages and journals with the lock released, so `stat` (which takes this lock)
///    is answered during a save; what changes the content waits for `saving` instead.
/// 3. The sync engine's locks (`SyncEngine`; their order in `LockRank`): asked under a
///    copy's lock by cleanup and a set modification time. The engine reports outcomes
///    (`SyncEvent`) with its locks released, so it never takes a copy's lock under its own.
///    `stat` reads only what the engine publishes (`state(of:reading: .shown)`), never
///    its queue lock, which is held across some journal commits.
/// Debug builds check this order at run time (`LockOrder`).
/// Leaves, under which nothing else is taken: `InodeTable`, `HandleTable`, `ItemCache`
/// (whose writes to the metadata database are queued in memory), `openedVersions`,
/// `conflictCopies`, `conflictedVersions`, `refusedBackgroundReaders`, `virtual`'s, `picturelessVersions`, `invalidator`, `savePause`, the engine's `PinRegistry` and the
/// backend's `ConnectionMonitor`, and `PinKeeper`'s own (its pass runs with none held).
public final class SitefsFilesystem: FilesystemOperations, @unchecked Sendable {
    /// The server, through the mount's `ConnectionMonitor`: while it is unreachable, what
    /// needs it fails at once (ENETUNREACH) instead of after the I/O timeout.
    let backend: MonitoredBackend
    let configuration: FilesystemConfiguration
    let logger: Logger
    let cache: ItemCache
    /// The cache's copy on disk, for a warm remount.
    let metadata: MetadataDatabase
    let inodes = InodeTable()
    let handles = HandleTable()
    let content: ContentDirectory
    /// Lock order: first (see the type's documentation), before any copy's `condition`.
    let copies = OrderedMutex<[ItemIdentifier: LocalCopy]>([:], rank: .copies)
    /// The version each file had when last opened: opening the same version again lets the
    /// kernel keep the pages it cached (a second `cat` is served from memory). Any other
    /// version drops them; remote changes also invalidate through the change feed.
    let openedVersions = Mutex<[ItemIdentifier: String]>([:])
    /// Versions the server has no thumbnail of (see `fileServerThumbnails`).
    let picturelessVersions = Mutex<Set<String>>([])
    /// The thumbnailers and indexers refused content so far (each is logged once at info).
    let refusedBackgroundReaders = Mutex<Set<String>>([])
    /// Conflict copies made by this mount (their `user.sitefs.state` is "conflict").
    let conflictCopies = Mutex<Set<ItemIdentifier>>([])
    /// The server's version each of those copies' edits lost to (`user.sitefs.conflict_with`).
    let conflictedVersions = Mutex<[ItemIdentifier: SyncStatus.ConflictingVersion]>([:])
    /// atime, and ctime where this mount changed metadata (see the type).
    let localTimes = LocalTimes()
    /// Owners root gave, and other users' items made through `--allow-other` (see the type).
    let localOwners = LocalOwners()
    /// The search and versions folders (`VirtualNode`).
    let virtual = VirtualFolders()
    /// The signed-in user (conflict copies' names, new files' creator).
    let userName: String
    /// Others' locks on documents as last seen (`LockFileBackend` records them on their
    /// way in): `user.sitefs.lock`, `sitefs status`, "the document is free".
    let seenLocks: SeenLocks
    /// The locks this mount holds; started once the mount is live, stopped at unmount.
    private(set) var editingLocks: EditingLockKeeper!
    /// Everything the server does not have yet, and its way there: the core's only way to
    /// the uploads, the journal and what the mount shows of them.
    private(set) var sync: SyncEngine!
    let invalidator = Mutex<(any KernelCacheInvalidator)?>(nil)
    let startedAt = AttributeMapping.timespec(.now())
    /// Started once the mount is live (`mounted`).
    private(set) var poller: ChangeFeedPoller!
    /// Downloads pinned content and keeps it current; started once the mount is live.
    private(set) var keeper: PinKeeper!
    /// Called once the kernel has initialised the mount (it is live from then on).
    public var onMounted: (@Sendable () -> Void)?
    /// What the user should hear of without asking (a desktop notification): set before
    /// mounting. Called on the thread that learned it, no lock held; it must not block long.
    public var onNotice: (@Sendable (MountNotice) -> Void)?
    /// Tests only: runs in every save after the copy is marked `saving` and its lock
    /// released, before staging, so a test can hold a save there.
    let savePause = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests only: runs on the upload worker after each sync event is applied, before the
    /// engine counts its outcome as reported, so a test can hold a report there.
    let appliedPause = Mutex<(@Sendable (SyncEvent) -> Void)?>(nil)
    /// Tests only: runs in every open and getattr of a file after its item is read, before
    /// its copy and saves are looked at, so a test can have a save reported there.
    let itemReadPause = Mutex<(@Sendable () -> Void)?>(nil)
    /// Tests only: runs at each step of `succeed(_:by:shown:)` (before the first, after each),
    /// on the thread replacing the item, so a test can look at the mount between the steps.
    let successionPause = Mutex<(@Sendable (SuccessionStep) -> Void)?>(nil)

    /// `userName` is the signed-in user, shown in conflict copies' names.
    public init(backend: any DocumentBackend, configuration: FilesystemConfiguration, cacheDirectory: URL,
                uploadParallelism: Int = 4, userName: String = "sitefs", logger: Logger) throws {
        seenLocks = SeenLocks()
        self.backend = MonitoredBackend(LockFileBackend(backend, seen: seenLocks),
                                        monitor: ConnectionMonitor(clock: configuration.clock,
                                                                             probeInterval: configuration.offlineProbeInterval,
                                                                             logger: logger))
        self.configuration = configuration
        self.logger = logger
        self.userName = userName
        content = try ContentDirectory(cacheDirectory: cacheDirectory)  // creates the cache directory
        metadata = try MetadataDatabase(path: cacheDirectory.appendingPathComponent("metadata.sqlite").path, logger: logger)
        cache = ItemCache(maxAge: configuration.metadataMaxAge, persistence: metadata, clock: configuration.clock)
        // Resumes saves an earlier run of this cache dir did not finish.
        sync = try SyncEngine(backend: self.backend, journalPath: cacheDirectory.appendingPathComponent("journal.sqlite").path,
                              parallelism: uploadParallelism, delays: configuration.writeBackDelays,
                              renamesWait: configuration.namespaceWait, uploadWait: configuration.uploadWaitForRename,
                              userName: userName, unlinker: content.unlinker, clock: configuration.clock,
                              pinsPath: cacheDirectory.appendingPathComponent("pins.sqlite").path,
                              rescueDirectory: configuration.rescueDirectory, logger: logger)
        poller = ChangeFeedPoller(filesystem: self, interval: configuration.changePollInterval,
                                  changeWait: configuration.changeWait, clock: configuration.clock)
        keeper = PinKeeper(filesystem: self, interval: configuration.metadataMaxAge, clock: configuration.clock)
        editingLocks = EditingLockKeeper(
            backend: self.backend, holderName: configuration.holderName ?? userName, device: configuration.deviceName,
            timeout: configuration.lockTimeout, logger: logger,
            mayRelease: { [weak self] document in self?.sync.state(of: document, reading: .queue).isIdle ?? true })
        seenLocks.whenFree { [weak self] entry in self?.documentFreed(entry) }
        seenLocks.whenOwn { [weak self] document in self?.editingLocks.holdsOrTakes(document) ?? false }
        // Started only once the keeper exists: a save resumed from the journal may reach the
        // server at once, and its event asks the keeper for a pass (`apply`).
        let queries = SyncEngine.MountQueries(folderChain: { [weak self] folder in self?.folderChain(of: folder) },
                                              openCopyBase: { [weak self] identifier in self?.openCopyBase(identifier) },
                                              lockTakeSettled: { [weak self] identifier in
                                                  guard let locks = self?.editingLocks else { return false }
                                                  locks.waitWhileTaking(identifier, upTo: configuration.namespaceWait)
                                                  return locks.holdsOrTakes(identifier)
                                              })
        sync.start(asking: queries, restoring: { restored in
            content.removeLeftovers(keeping: restored.stagedPaths, copies: restorePinnedCopies())
            // After a restart: files created and renames made before it, still in the journal,
            // are shown again where the user left them.
            for item in restored.created { cache.upsert(item) }
            for identifier in restored.moved {
                if let known = cache.item(identifier) { cache.upsert(sync.view(known)) }
            }
            // And items deleted before it, their delete still queued, stay gone (the cache on
            // disk may still list them: it is written in the background).
            for identifier in restored.removed { cache.remove(identifier) }
        }, reporting: { [weak self] event in self?.apply(event) })
        // Pinned files missed while offline are fetched once the server answers again.
        self.backend.monitor.whenReconnected { [weak keeper] in keeper?.request() }
        self.backend.monitor.whenSignInRequired { [weak self] in self?.onNotice?(.signInRequired) }
    }

    /// Set by `sitefs unmount` when it stops waiting: after the unmount the daemon exits
    /// without waiting for uploads (the journal keeps them for the next mount).
    public var leavesUploadsQueued: Bool {
        get { leaveQueued.withLock { $0 } }
        set { leaveQueued.withLock { $0 = newValue } }
    }
    /// Lock order: a leaf.
    private let leaveQueued = Mutex(false)

    /// Upload state for `sitefs status` / `sitefs sync`.
    public var uploadStatus: SyncStatus { sync.status }

    /// The server is known to be unreachable (see `ConnectionMonitor`): work that only helps
    /// (thumbnails, background downloads, a fresh listing) is skipped or served from what is
    /// known. Namespace changes never ask this: the engine decides whether they go now.
    var isOffline: Bool { backend.monitor.offlineSince != nil }

    /// The item as the mount knows it without asking the server: made here (the engine's
    /// namespace, for a local identifier) or cached. Leaf locks only.
    func knownItem(_ identifier: ItemIdentifier) -> ProviderItem? {
        guard identifier.isLocal else { return cache.item(identifier) }
        return sync.state(of: identifier, reading: .namespace).created ?? cache.item(identifier)
    }

    /// Blocks until every save and rename reached the server, or the timeout passed (what
    /// waits out the settle delay is sent at once); then until the files they left to delete
    /// (large confirmed copies and snapshots go in the background) are gone, so at unmount the
    /// cache directory is left tidy. (`sitefs sync` waits for the uploads only.)
    public func waitForUploads(timeout: Duration) -> Bool {
        guard sync.settle(timeout: timeout) else { return false }
        content.unlinker.drain()
        return true
    }

    // MARK: Resolving inodes and names

    /// The identifier of a non-root inode.
    func identifier(of inode: InodeNumber) throws(Errno) -> ItemIdentifier {
        guard let identifier = inodes.identifier(of: inode) else { throw .staleNFSFileHandle }
        return identifier
    }

    /// Converts a kernel name to a server name.
    func serverName(_ name: FileName) throws(Errno) -> String {
        guard name.bytes.count <= 255 else { throw .fileNameTooLong }
        guard let text = name.string else { throw .invalidArgument }
        return text
    }

    /// `currentItem`, or for a file open through `handle` whose item has gone meanwhile
    /// (deleted on the server, or here), the item as the handle knew it: an open file keeps
    /// answering `fstat` and `ftruncate`, as POSIX has it, and its edits are kept (the save
    /// creates it again). A change feed that reports a deletion at once (a long-poll) made
    /// this window wide: an editor's truncate-and-write after its file was deleted elsewhere
    /// failed with ENOENT.
    func currentItem(_ identifier: ItemIdentifier, openThrough handle: HandleID?) throws(Errno) -> ProviderItem {
        do {
            return try currentItem(identifier)
        } catch {
            guard error == .noSuchFileOrDirectory, let handle, case .local(let copy, _)? = handles.file(handle) else { throw error }
            copy.condition.lock()
            defer { copy.condition.unlock() }
            guard let known = copy.knownItem, known.identifier == identifier else { throw error }
            return known
        }
    }

    /// The current metadata of an item: cached while fresh, else from the server.
    func currentItem(_ identifier: ItemIdentifier, maxAge: Duration? = nil) throws(Errno) -> ProviderItem {
        if identifier.isLocal {
            // Only this mount knows it (until its upload creates it on the server; then the
            // caller read it just before the server's item took its place).
            guard let item = knownItem(identifier) ?? successor(of: identifier) else { throw .noSuchFileOrDirectory }
            return item
        }
        // Removed here, its removal still queued: gone, whatever the server says meanwhile.
        if sync.state(of: identifier, reading: .namespace).isRemoved { throw .noSuchFileOrDirectory }
        if let cached = cache.item(identifier, notOlderThan: maxAge ?? configuration.metadataMaxAge) { return cached }
        let read = cache.beginRead()
        defer { cache.endRead(read) }
        let item: ProviderItem
        do throws(ProviderError) {
            item = sync.view(try backend.item(identifier))
        } catch where error.isTransient {
            // Offline: what we knew is better than an error for browsing.
            if let known = cache.item(identifier) { return known }
            throw handle(error, "stat \(identifier)")
        } catch {
            throw handle(error, "stat \(identifier)", dropping: identifier)
        }
        guard case .stale = cache.upsert(item, asOf: read) else { return item }
        // Changed here while the request was on its way (deleted, renamed, saved): what the
        // cache holds now is newer than the answer.
        guard let newer = cache.item(identifier) else { throw .noSuchFileOrDirectory }
        return newer
    }

    /// The full listing of a folder (or of the root: the sites), from cache or the server.
    func listing(of folder: ItemIdentifier?) throws(Errno) -> ItemCache.Listing {
        if let folder, folder.isLocal {
            // Made here, not on the server yet: what was made or moved into it here.
            let (names, identifiers) = sync.view(names: [], identifiers: [], of: folder)
            return ItemCache.Listing(names: names, identifiers: identifiers)
        }
        let key = folder ?? ItemCache.root
        if let cached = cache.listing(of: key) { return cached }
        do {
            return try fetchListing(of: folder, key: key)
        } catch where error == .ioError || error == .networkUnreachable {
            // Offline (or the server failing): browse what we knew.
            if let known = cache.listing(of: key, ignoringAge: true) { return known }
            throw error
        }
    }

    private func fetchListing(of folder: ItemIdentifier?, key: ItemIdentifier) throws(Errno) -> ItemCache.Listing {
        // Changes to the folder while its pages arrive are applied to them (ServerRead).
        let fetch = folder.map { cache.beginListing(of: $0) }
        defer { if let fetch { cache.endRead(fetch) } }  // a no-op once stored
        var names: [String] = []
        var identifiers: [ItemIdentifier] = []
        var token: PageToken?
        let pages = pageReadAhead(of: folder)
        var bounds = listingBounds(of: folder)
        repeat {
            let page = try pages.page(after: token)
            try admit(page, of: folder, to: &names, &identifiers, within: &bounds)
            token = page.next
        } while token != nil
        if folder == nil { names = SiteNames.unique(names, identifiers) }
        if let folder { (names, identifiers) = sync.view(names: names, identifiers: identifiers, of: folder) }
        let listing = ItemCache.Listing(names: names, identifiers: identifiers)
        guard let fetch else {
            cache.storeListing(listing, of: key)
            return listing
        }
        return cache.storeListing(listing, fetch: fetch)
    }

    func listingBounds(of folder: ItemIdentifier?) -> ListingBounds {
        ListingBounds(pageSize: configuration.pageSize, deduplicating: folder != nil)
    }

    /// Adds a fetched page to a listing being assembled, within `bounds` (see `report`).
    func admit(_ page: FetchedPage, of folder: ItemIdentifier?, to names: inout [String], _ identifiers: inout [ItemIdentifier],
               within bounds: inout ListingBounds) throws(Errno) {
        try report(Result { () throws(ListingBounds.Refusal) in try bounds.append(page, to: &names, &identifiers) }, of: folder)
    }

    /// What adding a page to a listing came to: a log line for each entry left out as a
    /// duplicate name; past the listing's bounds, a log line and EIO. Kept apart from the
    /// adding, so a caller holding a lock (a directory's snapshot) logs after releasing it.
    func report(_ admitted: Result<[String], ListingBounds.Refusal>, of folder: ItemIdentifier?) throws(Errno) {
        let listing = folder?.description.debugDescription ?? "sites"
        switch admitted {
        case .success(let duplicates):
            for name in duplicates { logger.warning("list \(listing): a second entry named \(name.debugDescription) is not shown") }
        case .failure(let refusal):
            logger.error("list \(listing): \(refusal)")
            throw .ioError
        }
    }

    /// The child of `parent` named `name`, or ENOENT.
    func child(named name: String, of parent: InodeNumber) throws(Errno) -> ProviderItem {
        let folder = parent == .root ? nil : try identifier(of: parent)
        guard let identifier = try listing(of: folder).identifier(named: name) else { throw .noSuchFileOrDirectory }
        return try currentItem(identifier)
    }

    /// The folder an operation creates something in: writable, and not the root.
    func writableFolder(_ parent: InodeNumber) throws(Errno) -> ProviderItem {
        guard parent != .root else { throw .permissionDenied }
        let folder = try currentItem(try identifier(of: parent))
        guard folder.kind.isContainer else { throw .notDirectory }
        guard folder.capabilities.contains(.addChildren), !configuration.readOnly else { throw .permissionDenied }
        return folder
    }

    // MARK: Entries and attributes

    /// What `stat` shows: the server's metadata, the local copy's size and time while it
    /// differs, and this mount's access and change times (`LocalTimes`).
    func attributes(of item: ProviderItem, inode: InodeNumber) -> FileAttributes {
        localOwners.overlay(localTimes.overlay(contentAttributes(of: item, inode: inode), of: item.identifier))
    }

    private func contentAttributes(of item: ProviderItem, inode: InodeNumber) -> FileAttributes {
        guard item.kind == .file else { return AttributeMapping.attributes(inode: inode, item: item, configuration: configuration) }
        // Asked before the copy's lock is taken, of what the engine publishes: `stat` waits
        // neither on the engine's queue lock (held across some journal commits) nor on it
        // while holding a copy's.
        let shown = item.identifier.isLocal ? nil : sync.state(of: item.identifier, reading: .shown).shownSave
        if let copy = copies.withLock({ $0[item.identifier] }) {
            copy.condition.lock()
            defer { copy.condition.unlock() }
            if case .ready = copy.state,
               copy.dirty || copy.writers > 0 || item.identifier.isLocal || shown?.isPending == true {
                return AttributeMapping.attributes(inode: inode, item: item, size: copy.size(), modified: copy.modificationTime(),
                                                   configuration: configuration)
            }
        } else if let pending = shown?.latest {
            // A save not on the server yet and no copy open (after a restart): the file is
            // what was saved, not what the server still has.
            return AttributeMapping.attributes(inode: inode, item: item, size: pending.size,
                                               modified: pending.modified.map(AttributeMapping.timespec),
                                               configuration: configuration)
        }
        return AttributeMapping.attributes(inode: inode, item: reportedSince(item, inode: inode), configuration: configuration)
    }

    /// `item` as the cache holds it now, when a save was reported since the caller read it:
    /// the copy and the shown save that stood for the content are gone, so the item read
    /// before would give the kernel the size before the save (a new file's 0 bytes: `git`
    /// then read a loose object it had just written as empty). A new file's inode is bound
    /// to the server's item by then.
    private func reportedSince(_ item: ProviderItem, inode: InodeNumber) -> ProviderItem {
        let identifier = item.identifier.isLocal ? (inodes.identifier(of: inode) ?? item.identifier) : item.identifier
        guard let current = cache.item(identifier), current.kind == item.kind,
              identifier != item.identifier || current.version != item.version else { return item }
        return current
    }

    /// An entry for the kernel; the caller counts the lookup once the reply is certain.
    /// `inode`: the item's, when the caller has it already (readdirplus, per entry).
    func entry(for item: ProviderItem, inode: InodeNumber? = nil) -> Entry {
        let inode = inode ?? inodes.inode(for: item.identifier)
        return Entry(attributes: attributes(of: item, inode: inode), attributeTimeout: configuration.kernelCacheTimeout,
                     entryTimeout: configuration.kernelCacheTimeout)
    }

    /// Maps a provider error to an errno, logs it once, and drops cached knowledge of an
    /// item the server says is gone.
    func handle(_ error: ProviderError, _ operation: @autoclosure () -> String, dropping identifier: ItemIdentifier? = nil) -> Errno {
        logger.failed(operation(), error)
        if case .notFound = error, let identifier { cache.remove(identifier) }
        return error.errno
    }

    /// A change of `folders` failed in transit: the server may have applied it with the answer
    /// lost, so what we cached of those folders is no longer trusted.
    func namespaceCallFailed(_ error: ProviderError, in folders: [ItemIdentifier]) {
        guard error.isTransient else { return }
        for folder in folders { cache.forgetListing(of: folder) }
    }

    // MARK: Lifecycle

    public func mounted(invalidator: any KernelCacheInvalidator) {
        self.invalidator.withLock { $0 = invalidator }
        poller.start()
        keeper.start()
        editingLocks.start()
        onMounted?()
    }

    /// One round of the change feed, now, on the calling thread: for tests that drive the
    /// core without mounting it (the poller's thread is not running then).
    public func pollChangeFeedOnce() {
        poller.pollOnce()
    }

    /// How long the change feed waits before its next round (its interval, longer while
    /// rounds keep failing).
    public var changeFeedWait: Duration { poller.nextWait }

    public func unmounting() {
        poller?.stop()
        keeper?.stop()
        editingLocks?.stop()
        metadata.flush()
    }

    /// After the unmount, once every upload is over: the metadata cache is complete, so the
    /// next mount of this cache directory may start from it as current.
    public func recordCleanShutdown() {
        metadata.markCleanShutdown()
    }

    /// How many requests are blocked waiting for an upload (a rename or delete of a new file
    /// waiting for its create): tests wait for one to get there.
    public var requestsWaitingForUploads: Int { sync.status.settling }

    deinit {
        poller?.stop()
        keeper?.stop()
        editingLocks?.stop()
        // Workers waiting out a retry's backoff return at once; one sending may take longer,
        // and is not waited for past this.
        sync.shutdown(waitingUpTo: .seconds(2))
    }

    public func forget(_ inode: InodeNumber, lookups: UInt64) {
        if VirtualNodeTable.isVirtual(inode) { return virtual.nodes.forget(inode, lookups: lookups) }
        inodes.forget(inode, lookups: lookups)
    }
}

/// Site names at the root: a name shared by several sites gets " (2)", " (3)" ... in the
/// order of the sites' ids, so the mapping is the same on every mount.
enum SiteNames {
    static func unique(_ names: [String], _ identifiers: [ItemIdentifier]) -> [String] {
        let order = identifiers.indices.sorted { lhs, rhs in
            let (a, b) = (identifiers[lhs].id, identifiers[rhs].id)
            return a.count != b.count ? a.count < b.count : a < b
        }
        var taken = Set<NameKey>()
        var result = names
        for index in order {
            var candidate = names[index]
            var counter = 2
            while taken.contains(NameKey(candidate)) {
                candidate = "\(names[index]) (\(counter))"
                counter += 1
            }
            taken.insert(NameKey(candidate))
            result[index] = candidate
        }
        return result
    }
}
