import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsConcurrency

/// The sync engine: everything the mount shows that the server does not have yet, and how it
/// gets there. It owns the durable journal, the uploads and deferred renames (`Uploader`),
/// the files created here and renames not sent yet (`LocalNamespace`), conflict handling, and
/// the rules by which an editor's save sequence becomes one new version of the original.
///
/// This class is the engine's whole interface toward the filesystem core, in four groups:
/// - **What the user sees** (`view`, `createdItem`, `state(of:)`): server items and
///   listings as changed by what the mount did and has not sent yet.
/// - **What the user did** (SyncEngine+Events.swift: `created`, `saved`, `removing`,
///   `renaming`, `deleted`, `modificationTimeSet`, `changingOnServer`): each recorded durably
///   before the call returns, or refused with a `SyncError`. Where the engine decides that
///   an identity moves (a new file becomes a new version of another), it says so in the
///   answer and the core moves its inodes and open copies.
/// - **What reached the server** (`SyncEvent`, delivered to the handler given to `start`).
/// - **Waiting and control** (`settle`, `expedite`, `retryFailed`, `status`).
///
/// The core never sees the uploader, the journal or the namespace.
///
/// Locks: the uploader's `condition`, the namespace's mutex and the uploader's `published`
/// save states are this module's; none is held while calling out (events are delivered with
/// all released), so the core may call in while holding its own locks (`copies`, a copy's
/// `condition`), never the reverse. `shownSave`, what `stat` asks, takes only `published`.
public final class SyncEngine: @unchecked Sendable {
    let uploader: Uploader
    let namespace = LocalNamespace()
    let logger: Logger
    /// Shown as the creator of files made here until the server says otherwise.
    let userName: String
    /// Set once by `start`, before any worker runs; read by the workers only.
    private var handler: (@Sendable (SyncEvent) -> Void)?
    /// Where a folder stands on the mount (see `FolderChain`), as the core knows it: asked
    /// with no lock of the engine's held when a mkdir or a move is recorded. Set once by the
    /// core before anything is recorded.
    public var folderChains: (@Sendable (ItemIdentifier) -> FolderChain?)?
    private let parallelism: Int
    /// How long a change made on the server at once waits for the renames queued before it.
    let renamesWait: Duration
    /// What an earlier run left unsent and this one shows again (see `restored`).
    public let restored: Restored
    /// What the user keeps on this device, and which local copies hold a pinned file's
    /// server version (see `PinRegistry`): durable beside the journal.
    public let pins: PinRegistry

    /// What the engine resumed from the journal, for the core to show at start.
    public struct Restored: Sendable {
        /// Files and folders created here whose create never reached the server.
        public var created: [ProviderItem]
        /// Server files renamed here whose rename was not sent yet (`view` shows them moved).
        public var moved: [ItemIdentifier]
        /// Server items deleted here whose delete was not sent yet (hidden until it is).
        public var removed: [ItemIdentifier] = []
    }

    /// Opens the journal at `journalPath` and resumes what an earlier run left; nothing is
    /// sent before `start`.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, settleDelay: Duration,
                renamesWait: Duration, userName: String, unlinker: BackgroundUnlinker, clock: MountClock,
                pinsPath: String? = nil, rescueDirectory: String? = nil, logger: Logger) throws {
        self.logger = logger
        pins = try PinRegistry(path: pinsPath)
        self.renamesWait = renamesWait
        self.userName = userName
        self.parallelism = parallelism
        let relay = EventRelay()
        uploader = try Uploader(backend: backend, journalPath: journalPath, parallelism: parallelism,
                                settleDelay: settleDelay, userName: userName, unlinker: unlinker, clock: clock,
                                rescueDirectory: rescueDirectory, logger: logger) { outcome in relay.upload(outcome) }
        restored = Self.restore(from: uploader, into: namespace, userName: userName)
        relay.engine = self
        uploader.onRenameOutcome = { outcome in relay.rename(outcome) }
        uploader.onOperationOutcome = { outcome in relay.operation(outcome) }
        uploader.onFoldersRemade = { remade in relay.engine?.deliver(.foldersRemade(remade)) }
        uploader.onJournalTrouble = { problem in relay.engine?.deliver(.journalTrouble(problem)) }
        // Folder operations put back while offline go as soon as the server answers again.
        (backend as? MonitoredBackend)?.monitor.whenReconnected { [weak uploader] in uploader?.serverReachableAgain() }
    }

    /// Starts the upload workers; `handler` hears every outcome (see `SyncEvent`), on a worker
    /// thread with no lock of the engine's held.
    public func start(reporting handler: @escaping @Sendable (SyncEvent) -> Void) {
        self.handler = handler
        uploader.start(parallelism: parallelism)
    }

    /// Stops the workers after the work in hand; what is unsent stays in the journal. Waits up
    /// to `wait` for them to return (false if some had not).
    @discardableResult
    public func shutdown(waitingUpTo wait: Duration = .zero) -> Bool {
        uploader.shutdown(waitingUpTo: wait)
    }

    /// Snapshots the journal still refers to: everything else in staging is debris.
    public var stagedPaths: Set<String> { uploader.stagedPaths }

    private static func restore(from uploader: Uploader, into namespace: LocalNamespace, userName: String) -> Restored {
        var created: [ProviderItem] = []
        var removed: [ItemIdentifier] = []
        for job in uploader.pendingCreations {
            guard let parent = job.parent else { continue }
            let now = Timestamp.now()
            let item = ProviderItem(identifier: job.identifier, parent: parent, name: job.name, kind: .file, size: job.size,
                                    created: now, modified: job.modified ?? now, createdBy: userName, modifiedBy: userName,
                                    version: "", capabilities: ProviderItem.localFileCapabilities)
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
        return Restored(created: created, moved: moved, removed: removed)
    }

    // MARK: What the user sees

    /// A server item as the mount shows it (renamed here and not sent yet: at its new place).
    public func view(_ item: ProviderItem) -> ProviderItem { namespace.view(item) }

    /// A page of a server listing as the mount shows it: files moved away left out, renamed
    /// ones under their new names. What moved or was created here is added by `complete`.
    public func view(page items: [ProviderItem], of folder: ItemIdentifier?) -> [ProviderItem] {
        namespace.view(page: items, of: folder)
    }

    /// A folder's whole listing as the mount shows it: with the files moved into it or
    /// created in it here.
    public func complete(names: [String], identifiers: [ItemIdentifier], of folder: ItemIdentifier) -> ([String], [ItemIdentifier]) {
        namespace.complete(names: names, identifiers: identifiers, of: folder)
    }

    /// True when a server listing of `folder` would not show what the mount shows.
    public func changesListing(of folder: ItemIdentifier) -> Bool { namespace.touches(folder) }

    /// Where `folder` stands on the mount now, nil when the core cannot tell.
    func chain(of folder: ItemIdentifier) -> FolderChain? { folderChains?(folder) }

    /// A file created here and not on the server yet, as the mount shows it.
    public func createdItem(_ identifier: ItemIdentifier) -> ProviderItem? { namespace.created(identifier) }

    /// The file created here that the mount shows as `name` in `folder`.
    public func createdItem(named name: String, in folder: ItemIdentifier) -> ProviderItem? {
        namespace.created(named: name, in: folder)
    }

    /// The newest save of a file not yet confirmed by the server (queued, in flight or failed):
    /// after a restart the file's size and content are this save's, not the server's. Read
    /// without waiting for the engine's queue lock, which is held across some journal
    /// commits, so `stat` and `open` never wait for an fsync.
    public func shownSave(of identifier: ItemIdentifier) -> PublishedSave? { uploader.publishedSave(of: identifier) }

    /// Where an item stands with the server, read in one step.
    public func state(of identifier: ItemIdentifier) -> ItemSyncState { uploader.state(of: identifier) }

    /// True when `version` is one this mount's own last upload of the item replaced: a
    /// change-feed report of it arrives late and must not bring the old version back.
    public func isSupersededByOwnUpload(_ version: String, of identifier: ItemIdentifier) -> Bool {
        uploader.replacedByOwnUpload(version, of: identifier)
    }

    /// Files programs make only for themselves (lock files, swap files, probes): they work on
    /// the mount like any file but never go to the server.
    public static func keepsLocal(_ name: String) -> Bool { LocalOnlyNames.matches(name) }

    // MARK: Waiting and control

    /// Waits until nothing of `identifier` (or nothing at all) is queued, in flight or being
    /// reported; what waits out the settle delay is sent at once. False on timeout.
    public func settle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        uploader.waitUntilIdle(identifier, timeout: timeout)
    }

    /// How many callers are blocked in `settle` now: a test waits for a caller to get there
    /// instead of sleeping.
    public var settling: Int { uploader.settleWaiterCount }

    /// `sitefs sync`: everything waiting out the settle delay is due now.
    public func expedite() { uploader.expedite() }

    /// `sitefs retry`: failed saves are queued again.
    public func retryFailed() { uploader.retryFailed() }

    /// For `sitefs status` and `sitefs sync`.
    public var status: SyncStatus { uploader.status }
    /// Items with a save or rename queued, in flight or failed.
    public var busyItems: Set<ItemIdentifier> { uploader.busyItems }

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
    }
}
