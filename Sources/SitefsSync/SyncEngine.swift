import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsConcurrency

/// The sync engine: everything the mount shows that the server does not have yet, and how it
/// gets there. It owns the durable journal, the uploads and deferred renames (`Uploader`),
/// the files and folders made here and the renames not sent yet (`LocalNamespace`), conflict
/// handling, the pins, and the rules by which an editor's save sequence becomes one new
/// version of the original.
///
/// This class is the engine's whole interface toward the filesystem core. The core never
/// sees the uploader, the journal or the namespace; it makes no namespace change on the
/// server itself and never decides whether one can go now.
///
/// **Lifecycle**
/// - `start(asking:restoring:reporting:)`: hands the core what an earlier run left (files
///   and folders made here, renames and deletes not sent, snapshots still needed), then
///   starts the workers. Nothing is sent before it.
/// - `shutdown(waitingUpTo:)`: stops the workers; what is unsent stays in the journal.
///
/// **Reads** (never block on the network)
/// - `view`: server items, pages, listings and change-feed reports as the mount shows them
///   (renames not sent yet applied, items made here added, items removed here left out).
///   The namespace's mutex only; a report also asks the queue whether this mount's own
///   upload replaced the version it names.
/// - `state(of:reading:)`: where one item stands; the caller names the parts it needs, and
///   only their locks are taken (see `ItemSyncState.Parts`): what `stat` needs (`.shown`)
///   never waits for the queue lock, which is held across some journal commits.
/// - `status`: the whole queue, for `sitefs status` and for the state-change feed.
/// - `pins`: what is pinned and which local copies hold a pinned file's server version.
///
/// **Commands** (each change recorded durably before it returns, or refused with a
/// `SyncError` after the engine logged why)
/// - `apply(_:)`: every namespace change (a new file, mkdir, unlink, rmdir, rename). The
///   engine decides whether it goes to the server now or is queued, by the rule below, and
///   answers what it came to (`NamespaceOutcome`); where an identity moves (a new file
///   became a new version of another), it says so and the core moves its inodes and copies.
///   A change made now waits for the server (and the renames before it), no lock held.
/// - `save(_:)`: a file's content, staged and fsynced by the core: journaled and queued.
/// - `setModificationTime(_:of:)`: a set mtime goes with the pending save of the file.
/// - `forget(_:)`: the item is gone (deleted on the server, removed here, a new file that
///   could not be opened): nothing more of it is sent or shown as made here.
/// - `changePins(_:)`: pin, unpin, and the records of kept copies.
/// - `settle(_:timeout:)`: what waits out the settle delay is due now; waits until it has
///   reached the server (a zero timeout only makes it due: `sitefs sync`).
/// - `retryFailed()`: failed saves are queued again (`sitefs retry`).
///
/// **Outcomes**: `SyncEvent`s, delivered to the handler given to `start` on a worker thread
/// with no lock of the engine's held.
///
/// **Now or later.** A mkdir, a rename of a folder or over a file, and a chmod go to the
/// server at once when the connection monitor does not know the server to be unreachable
/// and the change's folder exists there (it is not a folder made here whose mkdir is still
/// queued); such a change is sent only after the renames queued before it (`renamesWait`),
/// so the server sees changes in the order they were made. Otherwise, and when the call is
/// lost in transit (or the renames before it cannot be sent while offline), it is queued as
/// a `NamespaceOperation` or a deferred rename, shown at once, and replayed in the order
/// made once the server answers (`serverReachableAgain`). Deletes are always queued (`rm`
/// does not wait for the server; `rm -r` goes as one delete of the folder where it can, see
/// `OperationQueue`), and so are new files, their renames, and renames of server files (not
/// over another file). What may begin an editor's save sequence waits before it is sent
/// (`WriteBackDelays`), which lets the sequence fold (SyncEngine+EditorSaves.swift); the
/// rest goes at once.
///
/// **Locks**: the uploader's `condition` → the namespace's mutex → the uploader's
/// `published` save states (`LockRank`), with the pin registry and the connection monitor as
/// leaves. None is held while calling out: events are delivered, and `MountQueries` asked,
/// with all released, and no lock is held across a network call. So the core may call in
/// while holding its own locks (`copies`, a copy's `condition`), never the reverse.
public final class SyncEngine: @unchecked Sendable {
    let uploader: Uploader
    let namespace = LocalNamespace()
    let logger: Logger
    /// The server, through the mount's connection monitor: namespace changes made at once.
    let backend: any DocumentBackend
    /// Whether the server is known to be unreachable: the now-or-later rule's input. Nil
    /// for a backend without one (tests): always reachable.
    let monitor: ConnectionMonitor?
    /// Shown as the creator of files made here until the server says otherwise.
    let userName: String
    /// Set once by `start`, before any worker runs; read by the workers only.
    private var handler: (@Sendable (SyncEvent) -> Void)?
    /// What the engine asks the core; set once by `start`, before anything is recorded.
    private var queries: MountQueries?
    private let parallelism: Int
    /// How long a change made on the server at once waits for the renames queued before it.
    let renamesWait: Duration
    /// How long a rename made on the server at once waits for the moved file's pending save.
    let uploadWait: Duration
    /// What an earlier run left unsent, handed to the core by `start`.
    private let restored: Restored
    let pinRegistry: PinRegistry

    /// What the engine resumed from the journal, for the core to show before anything runs.
    public struct Restored: Sendable {
        /// Files and folders created here whose create never reached the server.
        public var created: [ProviderItem]
        /// Server files renamed here whose rename was not sent yet (`view` shows them moved).
        public var moved: [ItemIdentifier]
        /// Server items deleted here whose delete was not sent yet (hidden until it is).
        public var removed: [ItemIdentifier] = []
        /// Snapshots the journal still refers to: everything else in staging is debris.
        public var stagedPaths: Set<String> = []
    }

    /// What the engine asks the core: where things stand on the mount. Asked with no lock of
    /// the engine's held; the core answers from leaf locks only.
    public struct MountQueries: Sendable {
        /// Where a folder stands on the mount (see `FolderChain`), nil when the core cannot
        /// tell: asked when a mkdir or a move into the folder is recorded.
        public var folderChain: @Sendable (ItemIdentifier) -> FolderChain?
        /// The version an open copy of a file is based on: a new file taking a server file's
        /// place builds on it.
        public var openCopyBase: @Sendable (ItemIdentifier) -> String?
        /// Returns once no lock for editing is being taken on the server file (bounded): a
        /// save of it is about to be sent, and must carry the lock's token. Then whether this
        /// mount holds or takes one on it (a 423 met then was this mount's own lock).
        public var lockTakeSettled: @Sendable (ItemIdentifier) -> Bool

        public init(folderChain: @escaping @Sendable (ItemIdentifier) -> FolderChain?,
                    openCopyBase: @escaping @Sendable (ItemIdentifier) -> String?,
                    lockTakeSettled: @escaping @Sendable (ItemIdentifier) -> Bool = { _ in false }) {
            self.folderChain = folderChain
            self.openCopyBase = openCopyBase
            self.lockTakeSettled = lockTakeSettled
        }
    }

    /// Opens the journal at `journalPath` and resumes what an earlier run left; nothing is
    /// sent before `start`.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, delays: WriteBackDelays,
                renamesWait: Duration, uploadWait: Duration = .seconds(60), userName: String, unlinker: BackgroundUnlinker,
                clock: MountClock, pinsPath: String? = nil, rescueDirectory: String? = nil, logger: Logger) throws {
        self.logger = logger
        self.backend = backend
        monitor = (backend as? MonitoredBackend)?.monitor
        pinRegistry = try PinRegistry(path: pinsPath, backendDurable: { items in try backend.makeDurable(items) })
        self.renamesWait = renamesWait
        self.uploadWait = uploadWait
        self.userName = userName
        self.parallelism = parallelism
        let relay = EventRelay()
        uploader = try Uploader(backend: backend, journalPath: journalPath, parallelism: parallelism,
                                delays: delays, userName: userName, unlinker: unlinker, clock: clock,
                                rescueDirectory: rescueDirectory, logger: logger) { outcome in relay.upload(outcome) }
        restored = Self.restore(from: uploader, into: namespace, userName: userName)
        relay.engine = self
        uploader.onRenameOutcome = { outcome in relay.rename(outcome) }
        uploader.onOperationOutcome = { outcome in relay.operation(outcome) }
        uploader.onFoldersRemade = { remade in relay.engine?.deliver(.foldersRemade(remade)) }
        uploader.onJournalTrouble = { problem in relay.engine?.deliver(.journalTrouble(problem)) }
        // Folder operations put back while offline go as soon as the server answers again.
        monitor?.whenReconnected { [weak uploader] in uploader?.serverReachableAgain() }
    }

    /// Hands `restoring` what an earlier run left (before any worker runs, so no outcome can
    /// overtake it), then starts the upload workers; `handler` hears every outcome (see
    /// `SyncEvent`), on a worker thread with no lock of the engine's held. Call once.
    public func start(asking queries: MountQueries, restoring: (Restored) -> Void,
                      reporting handler: @escaping @Sendable (SyncEvent) -> Void) {
        self.queries = queries
        self.handler = handler
        uploader.beforeSendingSave = queries.lockTakeSettled
        restoring(restored)
        uploader.start(parallelism: parallelism)
    }

    /// Stops the workers after the work in hand; what is unsent stays in the journal. Waits up
    /// to `wait` for them to return (false if some had not).
    @discardableResult
    public func shutdown(waitingUpTo wait: Duration = .zero) -> Bool {
        uploader.shutdown(waitingUpTo: wait)
    }

    private static func restore(from uploader: Uploader, into namespace: LocalNamespace, userName: String) -> Restored {
        var created: [ProviderItem] = []
        var removed: [ItemIdentifier] = []
        for job in uploader.pendingCreations {
            guard let parent = job.parent else { continue }
            let now = Timestamp.now()
            let item = ProviderItem(identifier: job.identifier, parent: parent, name: job.name, kind: .file, size: job.size,
                                    created: now, modified: job.modified ?? now, createdBy: userName, modifiedBy: userName,
                                    version: "", capabilities: ProviderItem.localFileCapabilities, mode: job.mode)
            namespace.addCreated(item)
            created.append(item)
        }
        for operation in uploader.pendingOperations {
            switch operation.kind {
            case .makeFolder:
                let now = Timestamp.now()
                let folder = ProviderItem(identifier: operation.identifier, parent: operation.parent, name: operation.name,
                                          kind: .folder, size: 0, created: now, modified: now, createdBy: userName,
                                          modifiedBy: userName, version: "", capabilities: ProviderItem.localFolderCapabilities)
                namespace.addCreated(folder)
                created.append(folder)
            case .makeSymlink:
                let now = Timestamp.now()
                let target = operation.target ?? []
                let link = ProviderItem(identifier: operation.identifier, parent: operation.parent, name: operation.name,
                                        kind: .symlink, size: Int64(target.count), created: now, modified: now,
                                        createdBy: userName, modifiedBy: userName, version: "",
                                        capabilities: ProviderItem.localLinkCapabilities, symlinkTarget: target)
                namespace.addCreated(link)
                created.append(link)
            case .setMode:
                guard let mode = operation.mode else { continue }
                if operation.identifier.isLocal {
                    namespace.setCreatedMode(operation.identifier, to: mode)
                    if let index = created.firstIndex(where: { $0.identifier == operation.identifier }) { created[index].mode = mode }
                } else {
                    namespace.setMode(operation.identifier, to: mode)
                }
            case .deleteFile, .removeFolder:
                namespace.hide(operation.identifier)
                removed.append(operation.identifier)
            }
        }
        var moved: [ItemIdentifier] = []
        for rename in uploader.pendingRenames {
            namespace.setMoved(rename.identifier, to: (rename.parent, rename.name))
            moved.append(rename.identifier)
        }
        return Restored(created: created, moved: moved, removed: removed, stagedPaths: uploader.stagedPaths)
    }

    // MARK: Reads

    /// A server item as the mount shows it (renamed here and not sent yet: at its new place).
    public func view(_ item: ProviderItem) -> ProviderItem { namespace.view(item) }

    /// A page of a server listing as the mount shows it: files moved away left out, renamed
    /// ones under their new names. What moved or was created here is added by
    /// `view(names:identifiers:of:)`.
    public func view(page items: [ProviderItem], of folder: ItemIdentifier?) -> [ProviderItem] {
        namespace.view(page: items, of: folder)
    }

    /// A folder's whole listing as the mount shows it: with the items moved into it or made
    /// in it here (for a folder made here: only those).
    public func view(names: [String], identifiers: [ItemIdentifier], of folder: ItemIdentifier) -> ([String], [ItemIdentifier]) {
        namespace.complete(names: names, identifiers: identifiers, of: folder)
    }

    /// A change-feed report of a server item as the mount shows it, or nil when the mount
    /// must not show it now: the item is removed here and the removal not settled; a file
    /// of that name is being created here in its folder and `known` is nil (this is that
    /// create, whose outcome brings the item in, or a file it will not overwrite: listing it
    /// would show the name twice); or the reported version is the one this mount's own
    /// upload replaced (the feed lags, and opening the file would fetch the old content).
    /// `known`: the item as the core knows it now.
    public func view(report item: ProviderItem, known: ProviderItem?) -> ProviderItem? {
        if namespace.isHidden(item.identifier) { return nil }
        let shown = namespace.view(item)
        if known == nil, let parent = shown.parent, namespace.created(named: shown.name, in: parent) != nil { return nil }
        if let known, known.version != shown.version, uploader.replacedByOwnUpload(shown.version, of: shown.identifier) {
            return nil
        }
        return shown
    }

    /// Where an item stands, as of one moment per part: only the parts in `parts` are read,
    /// each under its own lock (see `ItemSyncState.Parts`), taken and released in turn.
    public func state(of identifier: ItemIdentifier, reading parts: ItemSyncState.Parts = .all) -> ItemSyncState {
        var state = parts.contains(.queue) ? uploader.state(of: identifier)
            : ItemSyncState(hasPendingSave: false, isUploading: false, hasFailed: false, hasPendingRename: false,
                            mayBeOnServer: false)
        if parts.contains(.namespace) {
            state.created = namespace.created(identifier)
            state.isRemoved = namespace.isHidden(identifier)
            state.changesListing = namespace.touches(identifier)
        }
        if parts.contains(.shown) { state.shownSave = uploader.publishedSave(of: identifier) }
        return state
    }

    /// The whole queue, for `sitefs status` and `sitefs sync`, with the items not simply on
    /// the server and the callers blocked in `settle`.
    public var status: SyncStatus { uploader.status }

    /// What the user keeps on this device, and which local copies hold a pinned file's server
    /// version (see `PinRegistry`), as of one moment. A leaf lock.
    public var pins: PinRegistry.Pins { pinRegistry.pins }

    /// Files programs make only for themselves (lock files, swap files, probes): they work on
    /// the mount like any file but never go to the server.
    public static func keepsLocal(_ name: String) -> Bool { LocalOnlyNames.matches(name) }

    /// Where `folder` stands on the mount now, nil when the core cannot tell.
    func chain(of folder: ItemIdentifier) -> FolderChain? { queries?.folderChain(folder) }

    /// The version an open copy of the item is based on (see `MountQueries`).
    func openCopyBase(_ identifier: ItemIdentifier) -> String? { queries?.openCopyBase(identifier) }

    // MARK: Waiting and control

    /// Makes what waits out the settle delay (of `identifier`, or of everything) due now, and
    /// waits until nothing of it is queued, in flight or being reported. False on timeout:
    /// with `.zero`, it is only made due.
    @discardableResult
    public func settle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        uploader.waitUntilIdle(identifier, timeout: timeout)
    }

    /// Waits (up to `timeout`) until the core has been told the outcome of the item's save
    /// that reached the server. Nothing is made due. False on timeout.
    public func waitUntilReported(_ identifier: ItemIdentifier, timeout: Duration) -> Bool {
        uploader.waitUntilReported(identifier, timeout: timeout)
    }

    /// `sitefs retry`: failed saves are queued again.
    public func retryFailed() { uploader.retryFailed() }

    /// fsyncdir: every delete and rmdir made so far survives a power cut once this returns
    /// (POSIX keeps an unlink only once its folder is fsynced, and so does the journal).
    public func makeRemovalsDurable() throws(SyncError) {
        do {
            try uploader.syncJournal()
        } catch {
            throw .journal
        }
    }

    /// Pins and the records of kept copies: durable when this returns.
    public func changePins(_ change: PinChange) throws {
        switch change {
        case .pin(let identifier): try pinRegistry.pin(identifier)
        case .unpin(let identifier): try pinRegistry.unpin(identifier)
        case .keep(let identifier, let kept): try pinRegistry.keep(identifier, kept)
        case .forgetKept(let identifier): try pinRegistry.forgetKept(identifier)
        }
    }

    // MARK: Outcomes

    /// Hands an event to the core (no lock of the engine's held).
    fileprivate func deliver(_ event: SyncEvent) { handler?(event) }

    /// Turns the uploader's outcomes into events, with the namespace brought up to date first.
    fileprivate func report(_ outcome: Uploader.Outcome) {
        let job = outcome.job
        let event: SyncEvent
        switch outcome {
        case .uploaded(_, let item):
            event = .uploaded(namespace.view(item), basedOn: job.baseVersion)
        case .conflicted(_, let original, let copy):
            event = .conflicted(job.identifier, original: original.map(namespace.view), copy: copy)
        case .created(_, let item), .recreated(_, let item):
            // Out of the namespace before the core hears it: from now on the server item is
            // the file, and a listing fetched meanwhile must not add the local one again.
            let shown = namespace.view(item)
            namespace.removeCreated(job.identifier)
            event = .replaced(job.identifier, by: shown)
        case .rescued(_, let copy, let savedAs, let reason):
            // A file only here is the rescued copy from now on; a server file keeps its own
            // version, with the edit beside it.
            if job.identifier.isLocal { namespace.removeCreated(job.identifier) }
            event = .rescued(job.identifier, copy: copy, savedAs: savedAs, reason: reason)
        case .failed:
            event = .failed(job.identifier)
        }
        handler?(event)
    }

    fileprivate func report(_ outcome: Uploader.RenameOutcome) {
        switch outcome {
        case .renamed(let rename, let item):
            if uploader.pendingRename(of: rename.identifier) == nil { namespace.setMoved(rename.identifier, to: nil) }
            handler?(.renamed(namespace.view(item), requested: (rename.parent, rename.name)))
        case .dropped(let rename, let error):
            if uploader.pendingRename(of: rename.identifier) == nil { namespace.setMoved(rename.identifier, to: nil) }
            var gone = false
            if case .notFound = error { gone = true }
            handler?(.renameDropped(rename.identifier, shown: (rename.parent, rename.name), serverParent: rename.serverParent,
                                    gone: gone))
        }
    }
}

/// Carries the uploader's reports to the engine, which exists only once the uploader does.
private final class EventRelay: @unchecked Sendable {
    /// Set once in the engine's init, before any worker starts.
    weak var engine: SyncEngine?

    func upload(_ outcome: Uploader.Outcome) { engine?.report(outcome) }
    func rename(_ outcome: Uploader.RenameOutcome) { engine?.report(outcome) }
    func operation(_ outcome: Uploader.OperationOutcome) {
        guard let engine, let event = engine.report(outcome) else { return }
        engine.deliver(event)
        // Hidden until the core has dropped it: a listing answered in between showed it again.
        if case .removed(let identifier) = event { engine.namespace.unhide(identifier) }
    }
}
