import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsConcurrency

/// Uploads saved content in the background, so close() never waits for the network, from
/// a durable journal, so no save is lost when the daemon dies.
///
/// Per file the latest save wins: a save queued behind another of the same file replaces
/// it (the older snapshot is never uploaded after a newer one), and a save arriving while
/// an upload of that file is in flight runs next, based on the version that upload
/// produced. Different files upload in parallel. A save waits out the settle delay first,
/// so what an editor does within it (a temp file renamed over the original, a backup
/// deleted) is folded into one upload by the filesystem (`claim`, `retarget`). Transient
/// failures (unreachable, 5xx, 429, an expired sign-in) are retried with capped
/// exponential backoff for as long as it takes; conflicts and server-side deletions are
/// resolved without losing the edit (`attempt`, UploadAttempt.swift), a folder deleted on
/// the server is made again (`remakeFolders`, Uploader+FolderRemaking.swift); any other verdict saves the edit under another
/// name where the server takes it, and otherwise keeps the snapshot (and a copy in the
/// rescue folder) and reports the file failed until `retryFailed()`.
///
/// Renames of server files are queued here too (`attemptRename`, RenameAttempt.swift), ahead
/// of uploads that create files: a new file may take the name a queued rename frees.
final class Uploader: @unchecked Sendable {
    let backend: any DocumentBackend
    let logger: Logger
    /// Shown in conflict copies' names.
    let userName: String
    /// Which changes wait before they are sent, and how long (see `WriteBackDelays`).
    let delays: WriteBackDelays
    let journal: UploadJournal
    /// Snapshots done with are deleted through it: large ones off `condition`'s lock.
    let unlinker: BackgroundUnlinker
    private let onOutcome: @Sendable (Outcome) -> Void
    /// Set once by the engine before any rename is queued.
    public var onRenameOutcome: (@Sendable (RenameOutcome) -> Void)?
    /// Set once by the engine before any upload starts: folders made again (`remakeFolders`).
    public var onFoldersRemade: (@Sendable (FoldersRemade) -> Void)?
    /// Set once by the engine before any operation is queued.
    public var onOperationOutcome: (@Sendable (OperationOutcome) -> Void)?
    /// Set once by the engine before any upload starts: called, with no lock held, before a
    /// save of a server file is sent (see `SyncEngine.MountQueries.lockTakeSettled`).
    public var beforeSendingSave: (@Sendable (ItemIdentifier) -> Bool)?
    /// Set once by the engine before any work starts: the journal cannot be written (called
    /// once as the trouble starts, off the uploader's lock), or can again (nil).
    public var onJournalTrouble: (@Sendable (String?) -> Void)?
    /// Guards the state below. Lock order: after the core's `copies` and a copy's lock (the
    /// core asks under them), before the namespace's and `published`; never held while
    /// reporting an outcome, sending a request or waiting out a retry. Journal writes that
    /// must agree with the queue (an outcome's bookkeeping, a delete, a rename, a dropped
    /// save) commit under it; a save's own record (`enqueue`) is written outside it. `stat`
    /// does not take it: it reads `published`.
    let condition = OrderedCondition(rank: .uploader)
    // Guarded by `condition`, each with its invariants written on its type:
    var saves = SaveQueue()
    var renames = RenameQueue()
    var operations: OperationQueue
    var deletions = DeletionRecords()
    var identities: LocalIdentities
    var records = SyncRecords()
    /// Journal writes that failed, by the row they set, tried again every
    /// `journalRetryInterval` and before the workers stop (see `JournalWrite`).
    var unwrittenJournal = UnwrittenJournal()
    /// Where a save goes that nothing on the server takes (private to the user); nil: nowhere
    /// but staging, for `sitefs retry`.
    let rescueDirectory: String?
    /// Per item with a save queued, in flight or failed: the newest save and whether it is
    /// still to be sent, copied here after every change under `condition`, so `stat` reads
    /// it without waiting for `condition` (held across some journal commits). Lock order:
    /// taken under `condition` or alone; nothing is taken under it.
    let published = OrderedMutex<[ItemIdentifier: PublishedSave]>([:], rank: .published)
    /// Finished work whose outcome is still being reported: waiters wait for these too,
    /// so "idle" means the filesystem has also seen the result.
    var reporting: [ItemIdentifier: Int] = [:]
    var stopping = false
    private var threads: [Thread] = []
    /// Workers that have not returned yet (`shutdown` may wait for them).
    private var liveWorkers = 0
    /// Callers blocked in `waitUntilIdle` (tests wait for a caller to get there).
    var settleWaiters = 0
    /// Workers waiting in `next()`: when each waiting with a deadline wakes by itself, by
    /// worker index, and how many wait without one.
    private var wakeTimes: [Int: ContinuousClock.Instant] = [:]
    private var sleepersWithoutDeadline = 0
    /// The write-back delay, retry backoff and how long creates are kept run on it.
    let clock: MountClock

    /// How long a delete of a file waits for more deletes in its folder (see `OperationQueue`):
    /// `rm -r` deletes a file every half millisecond or so, then the folder.
    static let deleteSettle: Duration = .milliseconds(100)

    /// Opens the journal and resumes what an earlier run left. Throws when the journal cannot
    /// be opened for writing: a mount that could not record a save must not start.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, delays: WriteBackDelays = .uniform(.zero),
                userName: String, unlinker: BackgroundUnlinker, retiredCreationsKept: Duration = .seconds(600),
                clock: MountClock = .system, rescueDirectory: String? = nil, logger: Logger,
                onOutcome: @escaping @Sendable (Outcome) -> Void) throws {
        self.backend = backend
        self.rescueDirectory = rescueDirectory
        self.clock = clock
        self.unlinker = unlinker
        self.logger = logger
        self.userName = userName
        self.delays = delays
        self.onOutcome = onOutcome
        let journal = try UploadJournal(path: journalPath, backendDurable: { items in try backend.makeDurable(items) })
        self.journal = journal
        identities = LocalIdentities(madeFolders: try journal.madeFolders(), kept: retiredCreationsKept)
        operations = OperationQueue(resuming: try journal.pendingOperations(), lastSequence: try journal.lastOperationSequence())
        operations.parallelDeletes = max(1, parallelism)
        operations.deleteSettle = Self.deleteSettle
        saves.lastUploaded = try journal.uploadedVersions()
        try resume()
    }

    /// A small save's snapshot cannot be written again from its journal row (the cache
    /// folder's disk refuses it). The mount must not start: the save could neither be sent
    /// nor shown, and the file would read as the server's older version. Nothing is lost:
    /// the row keeps the bytes for the next start.
    struct SnapshotUnrestorable: Error, CustomStringConvertible {
        let name: String
        let path: String
        let underlying: ProviderError
        var description: String {
            "the save of \(name) cannot be written again to \(path) from the upload journal (\(underlying)); "
                + "the edit is kept in the journal: make room in the cache folder and mount again"
        }
    }

    /// Starts the upload threads (after the filesystem has read what was resumed).
    public func start(parallelism: Int) {
        condition.lock()
        liveWorkers += max(1, parallelism)
        condition.unlock()
        for index in 0..<max(1, parallelism) {
            // Each thread holds the uploader until `shutdown()` lets it return.
            let thread = Thread { self.work(worker: index) }
            thread.name = "sitefs-upload-\(index)"
            threads.append(thread)
            thread.start()
        }
    }

    /// Queues the journal's saves and renames again: per file the newest save, failed ones
    /// as failures, each small one's snapshot first made whole again from its row (a power
    /// cut may have emptied or lost it; when it cannot be, the mount does not start:
    /// `SnapshotUnrestorable`). Deletes an earlier run had started are kept for files with
    /// saves left.
    private func resume() throws {
        var resumed = 0
        for (journaled, failure) in try journal.unfinished() {
            var job = journaled
            if let content = job.content {
                job.content = nil
                job.contentInJournal = true
                do throws(ProviderError) {
                    try ContentDirectory.restoreSnapshot(at: job.stagedPath, content: content)
                } catch {
                    throw SnapshotUnrestorable(name: job.name, path: job.stagedPath, underlying: error)
                }
            }
            if let failure {
                saves.fail(job, reason: failure)
                publish(job.identifier)
            } else {
                enqueueLocked(job, delay: .zero, resuming: true)
                resumed += 1
            }
        }
        for rename in try journal.pendingRenames() { renames.put(rename) }
        for identifier in try journal.pendingDeletes() {
            if saves.queued[identifier] != nil || saves.failures[identifier] != nil {
                deletions.resumeFromBeforeRestart(identifier)
            } else {
                write(.clearDelete(identifier))  // its saves were dropped before the run ended
            }
        }
        let renameCount = renames.all.count
        if resumed + renameCount + operations.count > 0 {
            logger.notice("resuming \(resumed) saved uploads, \(renameCount) renames and \(operations.count) folder operations from the journal")
        }
    }

    // MARK: Saves

    /// Records a save durably, then queues it. Throws when the journal cannot be written:
    /// the caller's close()/fsync() must then fail rather than pretend the save is safe.
    /// `openAfter`: the file may still be open for writing (a close(2) that was not the last,
    /// an fsync): the save waits a moment, or until `fileClosed`.
    public func enqueue(_ job: Job, openAfter: Bool = false) throws {
        var job = job
        // The journal's fsync runs outside the lock, so uploads are not held up by it. A
        // save made while its file's create is being reported becomes a new version of what
        // that create made; should the create finish during the write, it is written again.
        while true {
            condition.lock()
            let created = identities.created(job.identifier)
            condition.unlock()
            if let created {
                job.identifier = created.identifier
                job.baseVersion = created.version
            }
            do {
                try journal.record(job)
            } catch {
                condition.lock()
                journalFailedLocked("the save of \(job.name)", error, refused: true)
                condition.unlock()
                throw error
            }
            condition.lock()
            if identities.created(job.identifier) == nil {
                if job.content != nil { job.contentInJournal = true }
                job.content = nil
                journalWrittenLocked()
                let due = enqueueLocked(job, delay: delays.save(createsFile: job.createsFile, openAfter: openAfter, name: job.name))
                // Nothing but a worker waits for a save to be queued.
                if workersNeedWaking(for: due) { condition.broadcast() }
                condition.unlock()
                return
            }
            condition.unlock()
        }
    }

    /// Queues a save (see `SaveQueue.enqueue`), discards what it leaves unneeded and returns
    /// when it is due. Call with `condition` locked.
    @discardableResult
    private func enqueueLocked(_ job: Job, delay: Duration, resuming: Bool = false) -> ContinuousClock.Instant {
        let due = clock.now + delay
        for snapshot in saves.enqueue(job, due: due, resuming: resuming) { discardSnapshot(at: snapshot) }
        publish(job.identifier)
        return due
    }

    /// Copies the item's save state to `published`. Call with `condition` locked, after any
    /// change to what is queued, in flight or failed for it, and once an outcome of it has
    /// been reported. Until then a save that reached the server stays published as pending
    /// (`isOnServer`): `stat` shows the saved size, not the metadata the core has not replaced
    /// with the server's answer yet (the old size, by which LibreOffice reopening its save read
    /// a truncated zip). A failed save is published as failed at once.
    func publish(_ identifier: ItemIdentifier) {
        let pending = saves.isPending(identifier)
        let latest = saves.newest(of: identifier)
        if latest == nil, reporting[identifier] != nil {
            published.withLock { published in
                guard let shown = published[identifier] else { return }
                published[identifier] = PublishedSave(latest: shown.latest, isPending: true, isOnServer: true)
            }
            return
        }
        published.withLock { $0[identifier] = latest.map { PublishedSave(latest: $0, isPending: pending) } }
    }

    /// The predecessor's row and snapshot go once the job it stood behind is done.
    func dropPredecessor(of job: Job) {
        if let predecessor = job.predecessor { discardSnapshot(at: predecessor.stagedPath) }
    }

    /// A save that will never be sent: its journal row and snapshot go, and the earlier save
    /// it kept as its predecessor.
    func discard(_ job: Job) {
        discardSnapshot(at: job.stagedPath)
        dropPredecessor(of: job)
    }

    /// A snapshot nothing needs any more: its journal row, then its file (kept while the row
    /// cannot be dropped, so the journal never names a missing snapshot).
    func discardSnapshot(at stagedPath: String) {
        write(.dropSave(stagedPath: stagedPath))
    }

    /// An upload found the server holding this mount's own earlier save (see
    /// `Job.predecessor`) and goes on from `version`: a save queued meanwhile on the same
    /// base builds on it too. Call with `condition` locked.
    func rebaseFollower(of identifier: ItemIdentifier, from base: String?, to version: String) {
        saves.rebaseQueued(identifier, from: base, to: version)
    }

    /// What `claim` found.
    public enum Claim: Sendable {
        /// Nothing queued for the item.
        case none
        /// Its upload has started (or, resumed after a restart, may have reached the server):
        /// too late to fold into another save; wait for it.
        case inFlight
        /// The queued save, taken out of the queue; its journal row and snapshot stay until
        /// the caller enqueues it again (under another identity) or drops it.
        case claimed(Job)
    }

    /// Takes an item's queued save out of the queue, e.g. to turn a new file renamed over an
    /// existing one into a new version of that one.
    public func claim(_ identifier: ItemIdentifier) -> Claim {
        condition.lock()
        defer { condition.unlock() }
        if mayBeOnServerLocked(identifier) { return .inFlight }
        guard let job = saves.removeQueued(identifier) else { return .none }
        publish(identifier)
        condition.broadcast()
        return .claimed(job)
    }

    /// A new file renamed before its upload: it is created under the new name. False when
    /// the file may be on the server already (`mayBeOnServer`): then nothing changes.
    public func retarget(_ identifier: ItemIdentifier, name: String, parent: ItemIdentifier, folders: FolderChain?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if mayBeOnServerLocked(identifier) { return false }
        func move(_ job: inout Job) {
            job.name = name
            job.parent = parent
            job.folders = folders
        }
        let formerName = saves.queued[identifier]?.name
        if saves.updateQueued(identifier, move) {
            write(.updateSave(saves.queued[identifier]!, failure: nil))
            // An editor's temp file renamed to its document's name: its long wait is over.
            if let formerName, WriteBackDelays.isEditorTempName(formerName) {
                let due = clock.now + delays.save(createsFile: true, openAfter: false, name: name)
                if saves.bringForward(identifier, to: due), workersNeedWaking(for: due) { condition.broadcast() }
            }
        }
        if saves.updateFailed(identifier, move), let failed = saves.failures[identifier] {
            write(.updateSave(failed.job, failure: failed.reason))
        }
        return true
    }

    /// True when a new file's create is in flight, was resumed from the journal and may have
    /// reached the server before the restart, or has just finished: deleting or renaming it
    /// must wait for that create and then act on what it made.
    public func mayBeOnServer(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return mayBeOnServerLocked(identifier)
    }

    func mayBeOnServerLocked(_ identifier: ItemIdentifier) -> Bool {
        // A queued save resumed from the journal (or standing in for one as its successor)
        // may have been created by the run before, killed before the answer arrived.
        saves.inFlight[identifier] != nil || saves.queued[identifier].map { $0.resumed || $0.predecessor != nil } == true
            || reporting[identifier] != nil || identities.created(identifier) != nil
    }

    /// A new file deleted here before it reached the server: its saves are dropped, in one
    /// step with the check, so no upload can start in between. False (and nothing dropped)
    /// when it may be on the server already (`mayBeOnServer`).
    public func discardIfNotSent(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if mayBeOnServerLocked(identifier) { return false }
        cancelLocked(identifier)
        return true
    }

    /// The file was deleted here: its pending saves are moot.
    public func cancel(_ identifier: ItemIdentifier) {
        condition.lock()
        defer { condition.unlock() }
        cancelLocked(identifier)
    }

    private func cancelLocked(_ identifier: ItemIdentifier) {
        if let job = saves.removeQueued(identifier) { discard(job) }
        if let job = saves.removeFailure(identifier) { discard(job) }
        publish(identifier)
        if let job = saves.inFlight[identifier] {
            deletions.cancelInFlight(identifier)
            // A restart must not resume it either; the snapshot goes once the upload is over.
            write(.dropSave(stagedPath: job.stagedPath), keepingSnapshot: true)
        }
        if renames.remove(identifier) { write(.dropRename(identifier)) }
        condition.broadcast()
    }

    /// `sitefs retry`: failed saves are queued again.
    public func retryFailed() {
        condition.lock()
        defer { condition.unlock() }
        for job in saves.removeAllFailures() {
            write(.updateSave(job, failure: nil))
            enqueueLocked(job, delay: .zero)
        }
        condition.broadcast()
    }

    /// The last writer of a server file closed it: a save of it waiting because the file was
    /// still open is due now. (A new file keeps its wait: an editor renames it after the close.)
    public func fileClosed(_ identifier: ItemIdentifier) {
        guard !identifier.isLocal else { return }
        condition.lock()
        defer { condition.unlock() }
        guard saves.bringForward(identifier, to: clock.now + delays.otherChanges) else { return }
        condition.broadcast()
    }

    /// `sitefs sync` and unmount: everything waiting out the settle delay is due now.
    public func expedite() {
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        saves.makeDue(at: now)
        renames.makeDue(at: now)
        operations.expediteDeletes()
        condition.broadcast()
    }

    /// Makes a pending upload of the item end with this modification time (the server sets
    /// its own on upload). False when nothing is queued or in flight for it.
    /// A chmod of a new file whose save is queued or being sent: its create carries it (or it
    /// follows the create in flight). Nothing to do when none is: the next save carries it.
    public func applyMode(_ mode: UInt16, to identifier: ItemIdentifier) {
        condition.lock()
        defer { condition.unlock() }
        if saves.updateQueued(identifier, { $0.mode = mode }), let job = saves.queued[identifier] {
            write(.updateSave(job, failure: nil))
            return
        }
        _ = saves.setLateMode(mode, for: identifier)
    }

    public func applyModified(_ modified: Timestamp, to identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if saves.updateQueued(identifier, { $0.modified = modified }) {
            publish(identifier)
            return true
        }
        return saves.setLateModified(modified, for: identifier)
    }

    /// Stops the workers after the work in hand (a retry waiting out its backoff ends at
    /// once); what is unsent stays in the journal, and journal writes still owed are tried
    /// once more. Waits up to `wait` for the workers to return: false if some had not by then.
    @discardableResult
    public func shutdown(waitingUpTo wait: Duration = .zero) -> Bool {
        let deadline = Date().addingTimeInterval(wait.seconds)
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        condition.broadcast()
        // Called on a worker (the last reference to the mount dropped as it reported): that
        // worker returns after this, so it is not waited for.
        let own = threads.contains { $0 === Thread.current } ? 1 : 0
        while liveWorkers > own {
            if !condition.wait(until: deadline) { return false }
        }
        retryUnwrittenLocked()
        return true
    }

    // MARK: Workers

    private enum Work {
        case upload(Job)
        case rename(RenameJob)
        case operation(NamespaceOperation)
    }

    private func work(worker: Int) {
        defer {
            condition.lock()
            liveWorkers -= 1
            condition.broadcast()
            condition.unlock()
        }
        while let work = next(worker: worker) {
            switch work {
            case .upload(let job):
                let outcome = attempt(job)  // ends with `finish` done, under the lock
                onOutcome(outcome)
                doneReporting(job.identifier)
            case .rename(let rename):
                let outcome = attemptRename(rename)  // ends with `finishRename` done, under the lock
                onRenameOutcome?(outcome)
                doneReporting(rename.identifier)
            case .operation(let operation):
                // Ends with `finishOperations` done, under the lock; none: put back.
                for outcome in attemptOperation(operation) {
                    onOperationOutcome?(outcome)
                    doneReporting(outcome.operation.identifier)
                }
            }
        }
    }

    private func doneReporting(_ identifier: ItemIdentifier) {
        condition.lock()
        reporting[identifier] = reporting[identifier].flatMap { $0 > 1 ? $0 - 1 : nil }
        if reporting[identifier] == nil { publish(identifier) }
        condition.broadcast()
        condition.unlock()
    }

    /// The next due piece of work: folder operations and renames first, each kind one at a
    /// time and both in the order made (an operation waits for the renames made before it, a
    /// rename for the operations); a new file waits while either is pending (one of them may
    /// free its name, or make its folder). Journal writes still owed are tried again here.
    private func next(worker: Int) -> Work? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stopping { return nil }
            let now = clock.now
            if let retry = unwrittenJournal.retryAt, retry <= now { retryUnwrittenLocked() }
            if let operation = nextOperationLocked(now: now) { return .operation(operation) }
            if let first = renames.next, first.notBefore <= now, !operations.isPending(upTo: first.afterOperation),
               let rename = takeRenameLocked(first) {
                return .rename(rename)
            }
            let holdingCreations = !renames.isIdle || !operations.isIdle
            if var job = saves.takeDue(at: now, holdingCreations: holdingCreations) {
                if job.createsFile, let parent = job.parent, case .ready(let resolved) = resolveFolderLocked(parent), resolved != parent {
                    job.parent = resolved  // made offline, on the server now
                    write(.updateSave(job, failure: nil))
                }
                saves.beginUpload(job)
                return .upload(job)
            }
            if let due = earliestDue(after: now) {
                wakeTimes[worker] = due
                clock.wait(on: condition, until: due)
                wakeTimes[worker] = nil
            } else {
                sleepersWithoutDeadline += 1
                condition.wait()
                sleepersWithoutDeadline -= 1
            }
        }
    }

    /// Whether work due at `due` needs the workers woken: not when none waits (each looks
    /// at the queue again when its work is over) or one wakes by itself by then. Waking
    /// every worker for every save made each of 1,000 quick creates rescan all the others.
    /// Call with `condition` locked.
    func workersNeedWaking(for due: ContinuousClock.Instant) -> Bool {
        if sleepersWithoutDeadline > 0 { return true }
        guard let earliest = wakeTimes.values.min() else { return false }
        return earliest > due
    }

    /// When the first queued save, rename or operation not due at `now` will be, or the next
    /// retry of journal writes. Call with `condition` locked.
    private func earliestDue(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let candidates = [saves.earliestDue(after: now), renames.earliestDue(after: now),
                          operations.firstDue, unwrittenJournal.retryAt]
        return candidates.compactMap { $0 }.filter { $0 > now }.min()
    }

    /// Bookkeeping once an upload is over. Call with `condition` locked. The journal row
    /// and the snapshot go only when the server holds the content.
    func finish(_ outcome: Outcome) {
        let job = outcome.job
        saves.endUpload(job.identifier)
        reporting[job.identifier, default: 0] += 1
        if case .failed = outcome {} else { dropPredecessor(of: job) }
        switch outcome {
        case .uploaded(_, let item):
            write(.confirm(job, version: item.version, follower: nil))
            saves.lastUploaded[job.identifier] = (job.baseVersion, item.version)
            // A newer save of the same file was based on what this upload just replaced:
            // it now builds on the version we produced.
            saves.rebaseQueued(job.identifier, from: job.baseVersion, to: item.version)
        case .created(_, let item):
            settleCreation(of: job, as: item)
        case .conflicted(_, let original, let copy):
            write(.confirm(job, version: copy.version, follower: nil))
            records.add(Status.Conflict(name: job.name, savedAs: copy.name, conflictsWith: original.map(Status.ConflictingVersion.init)))
        case .recreated(_, let item):
            write(.confirm(job, version: item.version, follower: nil))
        case .rescued(_, let copy, let savedAs, let reason):
            // A new file rescued is the copy from now on, as if created under that name.
            if job.createsFile { settleCreation(of: job, as: copy) } else { write(.confirm(job, version: copy.version, follower: nil)) }
            records.add(Status.Rescue(name: job.name, savedAs: savedAs, reason: reason))
        case .failed(_, let error):
            let kept = records.keptOnThisComputer.removeValue(forKey: job.stagedPath)
            let cancelledHere = deletions.takeCancelled(job.identifier)
            if cancelledHere, error.isTransient, operations.isPending(job.identifier) {
                // Maybe stored, the answer lost: the delete may meet it (`DeletionRecords`).
                dropPredecessor(of: job)
                let save = DeletionRecords.UnansweredSave(stagedPath: job.stagedPath, size: job.size)
                if let replaced = deletions.keepUnanswered(save, of: job.identifier) { discardSnapshot(at: replaced.stagedPath) }
            } else if cancelledHere || deletions.isFromBeforeRestart(job.identifier) && error.isNotFound {
                discard(job)
            } else if let newer = saves.queued[job.identifier] {
                // Superseded while retrying: it may have reached the server with the answer
                // lost (a reset after the commit, or a restart), so the newer save keeps it
                // as its predecessor, and whatever older one either carried goes.
                for older in Set([job.predecessor?.stagedPath, newer.predecessor?.stagedPath].compactMap { $0 }) {
                    discardSnapshot(at: older)
                }
                saves.updateQueued(job.identifier) { $0.predecessor = SaveJob.Predecessor(stagedPath: job.stagedPath, size: job.size) }
            } else if stopping, error.isTransient || { if case .notAuthenticated = error { true } else { false } }() {
                break  // unmounting, not failing: the journal keeps it for the next mount as it was
            } else {
                let reason = error.description + (kept.map { "; your edit is kept on this computer as \($0)" } ?? "")
                write(.updateSave(job, failure: reason))
                saves.fail(job, reason: reason)
            }
        }
        // A delete from before a restart is settled once no save of the item is left: it
        // reached the server (the saves met its 404 and went) or it never did.
        if saves.queued[job.identifier] == nil, saves.failures[job.identifier] == nil,
           deletions.settleBeforeRestart(job.identifier) {
            write(.clearDelete(job.identifier))
        }
        publish(job.identifier)
        condition.broadcast()
    }

    /// A new file's create made `item`: the save is confirmed and its local identifier
    /// retired (see `LocalIdentities`), and a newer save of the file (made while this one
    /// was sent) becomes a new version of what was created. Call with `condition` locked.
    private func settleCreation(of job: Job, as item: ProviderItem) {
        var follower = saves.removeQueued(job.identifier)
        follower?.identifier = item.identifier
        follower?.baseVersion = item.version
        write(.confirm(job, version: item.version, follower: follower))
        identities.retire(job.identifier, as: (item.identifier, item.version), at: clock.now)
        if let follower { enqueueLocked(follower, delay: .zero) }
    }

    /// While retrying: a newer save of the file makes this attempt moot (the newer one
    /// carries the same base and newer content); stopping ends retries, keeping the file.
    func supersededOrStopping(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping || (saves.queued[job.identifier] != nil && !job.createsFile) || deletions.isCancelledInFlight(job.identifier)
    }

    func isStopping() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }
}
