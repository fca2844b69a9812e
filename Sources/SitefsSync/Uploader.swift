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
/// resolved without losing the edit (see UploadAttempt), a folder deleted on the server is
/// made again (see Uploader+FolderRemaking); any other verdict saves the edit under another
/// name where the server takes it, and otherwise keeps the snapshot (and a copy in the
/// rescue folder) and reports the file failed until `retryFailed()`.
///
/// Renames of server files are queued here too (see RenameAttempt), ahead of uploads that
/// create files: a new file may take the name a queued rename frees.
final class Uploader: @unchecked Sendable {
    let backend: any DocumentBackend
    let logger: Logger
    /// Shown in conflict copies' names.
    let userName: String
    let settleDelay: Duration
    let journal: UploadJournal
    /// Snapshots done with are deleted through it: large ones off `condition`'s lock.
    let unlinker: BackgroundUnlinker
    private let onOutcome: @Sendable (Outcome) -> Void
    /// Set once by the engine before any rename is queued.
    public var onRenameOutcome: (@Sendable (RenameOutcome) -> Void)?
    /// Guards the queues below. Lock order: after the core's `copies` and a copy's lock (the
    /// core asks under them), before the namespace's and `published`; never held while
    /// reporting an outcome, sending a request or waiting out a retry. Journal writes that
    /// must agree with the queue (an outcome's bookkeeping, a delete, a rename, a dropped
    /// save) commit under it; a save's own record (`enqueue`) is written outside it. `stat`
    /// does not take it: it reads `published`.
    let condition = OrderedCondition(rank: .uploader)
    // Guarded by `condition`:
    var queued: [ItemIdentifier: Job] = [:]
    var order: [ItemIdentifier] = []
    var inFlight: [ItemIdentifier: Job] = [:]
    var failures: [ItemIdentifier: (Job, String)] = [:]
    var conflicts: [Status.Conflict] = []
    var renames: [ItemIdentifier: RenameJob] = [:]
    var renameOrder: [ItemIdentifier] = []
    var renamesInFlight: [ItemIdentifier: RenameJob] = [:]
    /// Namespace operations made offline, not sent yet, in the order made; one goes at a time.
    var operations: [NamespaceOperation] = []
    var operationInFlight: NamespaceOperation?
    /// The sequence of the last operation recorded: a rename queued now goes after it.
    var lastOperationSequence: Int64 = 0
    /// Folders made here that the server has now: local identifier -> server identifier.
    var madeFolders: [ItemIdentifier: ItemIdentifier] = [:]
    /// Folders made here whose mkdir failed for good: what was to go into them fails too.
    var abandonedFolders: Set<ItemIdentifier> = []
    /// Operations the server did not take, on purpose or not, for `sitefs status`.
    var operationsNotApplied: [Status.Failure] = []
    /// Folders made again because something was saved into them after they were deleted on
    /// the server, and saves rescued under another name, for `sitefs status`.
    var remadeFolders: [Status.Remade] = []
    var rescues: [Status.Rescue] = []
    /// Failed saves copied into `rescueDirectory`, by snapshot: where the copy is.
    var keptOnThisComputer: [String: String] = [:]
    /// Where a save goes that nothing on the server takes (private to the user); nil: nowhere
    /// but staging, for `sitefs retry`.
    let rescueDirectory: String?
    /// Set once by the engine before any upload starts: folders made again (`remakeFolders`).
    public var onFoldersRemade: (@Sendable (FoldersRemade) -> Void)?
    /// Set once by the engine before any operation is queued.
    public var onOperationOutcome: (@Sendable (OperationOutcome) -> Void)?
    /// Per item with a save queued, in flight or failed: the newest save and whether it is
    /// still to be sent, copied here after every change under `condition`, so `stat` reads
    /// it without waiting for `condition` (held across some journal commits). Lock order:
    /// taken under `condition` or alone; nothing is taken under it.
    let published = OrderedMutex<[ItemIdentifier: PublishedSave]>([:], rank: .published)
    /// Bytes sent so far per upload in flight.
    var sent: [ItemIdentifier: TransferProgress] = [:]
    /// Finished work whose outcome is still being reported: waiters wait for these too,
    /// so "idle" means the filesystem has also seen the result.
    var reporting: [ItemIdentifier: Int] = [:]
    /// Per item, the last upload that succeeded: the version it was based on and the one it
    /// produced. A save based on the former builds on our own upload, so it is rebased.
    var lastUploaded: [ItemIdentifier: (base: String?, result: String)] = [:]
    /// Modification times set while an upload of the item was in flight, applied after it.
    var lateModified: [ItemIdentifier: Timestamp] = [:]
    var signInRequired = false
    /// Items deleted here while an upload of theirs was in flight: its outcome is dropped
    /// (a 404 must not bring the file back).
    var cancelled: Set<ItemIdentifier> = []
    /// Items being deleted on the server right now: a 404 for one of their uploads is that
    /// delete, not someone else's, so the file must not be created again.
    var deleting: Set<ItemIdentifier> = []
    /// Items whose delete an earlier run had started (journaled) when it ended, with saves
    /// resumed: the same holds for a 404 of those, and the save then goes.
    var deletedBeforeRestart: Set<ItemIdentifier> = []
    /// Deletes in progress that are journaled (see `beginDelete`).
    var journaledDeletes: Set<ItemIdentifier> = []
    /// New files whose create has finished, by their retired local identifier: what the
    /// server made of them. A caller that looked the local one up just before (a rename, a
    /// delete, a save racing the outcome's report) acts on the server item instead.
    var retiredCreations: [ItemIdentifier: (identifier: ItemIdentifier, version: String)] = [:]
    /// When each of `retiredCreations` was added, oldest first. An entry goes once it is
    /// older than `retiredCreationsKept`: the filesystem moves the file's inode and open copy
    /// to the server identifier as the outcome is reported, so only a caller that looked the
    /// local one up moments before can still come with it, and a mount that runs for months
    /// must not keep an entry per file it ever created.
    var retirements: [(identifier: ItemIdentifier, at: ContinuousClock.Instant)] = []
    let retiredCreationsKept: Duration
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

    /// Opens the journal and resumes what an earlier run left.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, settleDelay: Duration = .zero,
                userName: String, unlinker: BackgroundUnlinker, retiredCreationsKept: Duration = .seconds(600),
                clock: MountClock = .system, rescueDirectory: String? = nil, logger: Logger,
                onOutcome: @escaping @Sendable (Outcome) -> Void) throws {
        self.backend = backend
        self.rescueDirectory = rescueDirectory
        self.clock = clock
        self.retiredCreationsKept = retiredCreationsKept
        self.unlinker = unlinker
        self.logger = logger
        self.userName = userName
        self.settleDelay = settleDelay
        self.onOutcome = onOutcome
        journal = try UploadJournal(path: journalPath)
        lastUploaded = try journal.uploadedVersions()
        try resume()
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

    /// Queues the journal's work again: per file the newest save, failed ones as failures,
    /// and the renames not applied yet.
    private func resume() throws {
        var resumed = 0
        for (job, failure) in try journal.unfinished() {
            if let failure {
                failures[job.identifier] = (job, failure)
                publish(job.identifier)
            } else {
                enqueueLocked(job, delay: .zero, resuming: true)
                resumed += 1
            }
        }
        madeFolders = try journal.madeFolders()
        operations = try journal.pendingOperations()
        lastOperationSequence = try journal.lastOperationSequence()
        for rename in try journal.pendingRenames() {
            renames[rename.identifier] = rename
            renameOrder.append(rename.identifier)
        }
        for identifier in try journal.pendingDeletes() {
            if queued[identifier] != nil || failures[identifier] != nil {
                deletedBeforeRestart.insert(identifier)
            } else {
                journal.clearDelete(identifier)  // its saves were dropped before the run ended
            }
        }
        if resumed + renames.count + operations.count > 0 {
            logger.notice("resuming \(resumed) saved uploads, \(renames.count) renames and \(operations.count) folder operations from the journal")
        }
    }

    // MARK: Saves

    /// Records a save durably, then queues it. Throws when the journal cannot be written:
    /// the caller's close()/fsync() must then fail rather than pretend the save is safe.
    public func enqueue(_ job: Job) throws {
        var job = job
        // The journal's fsync runs outside the lock, so uploads are not held up by it. A
        // save made while its file's create is being reported becomes a new version of what
        // that create made; should the create finish during the write, it is written again.
        while true {
            condition.lock()
            let created = retiredCreations[job.identifier]
            condition.unlock()
            if let created {
                job.identifier = created.identifier
                job.baseVersion = created.version
            }
            try journal.record(job)
            condition.lock()
            if retiredCreations[job.identifier] == nil {
                // A save made while its file is being deleted: that delete is journaled too.
                if deleting.contains(job.identifier), !journaledDeletes.contains(job.identifier) {
                    do {
                        try journal.recordDelete(job.identifier)
                        journaledDeletes.insert(job.identifier)
                    } catch {
                        logger.error("cannot record the delete of \(job.name) in the upload journal: \(error)")
                    }
                }
                let due = enqueueLocked(job, delay: settleDelay)
                // Nothing but a worker waits for a save to be queued.
                if workersNeedWaking(for: due) { condition.broadcast() }
                condition.unlock()
                return
            }
            condition.unlock()
        }
    }

    /// Queues a save, replacing an older one of the same file, and returns when it is due.
    /// The oldest save resumed from the journal is kept as the newer one's `predecessor`
    /// instead of being dropped: it is the one that may have been in flight when the last
    /// run ended.
    @discardableResult
    private func enqueueLocked(_ job: Job, delay: Duration, resuming: Bool = false) -> ContinuousClock.Instant {
        var job = job
        job.notBefore = clock.now + delay
        job.resumed = resuming
        if let last = lastUploaded[job.identifier], job.baseVersion == last.base { job.baseVersion = last.result }
        if let replaced = queued[job.identifier] {
            if replaced.stagedPath != job.stagedPath {
                if replaced.resumed && replaced.predecessor == nil {
                    job.predecessor = Job.Predecessor(stagedPath: replaced.stagedPath, size: replaced.size)
                } else {
                    job.predecessor = job.predecessor ?? replaced.predecessor
                    discardSnapshot(at: replaced.stagedPath)
                }
            }
        } else {
            order.append(job.identifier)
        }
        if let failed = failures.removeValue(forKey: job.identifier), failed.0.stagedPath != job.stagedPath {
            job.predecessor = job.predecessor ?? failed.0.predecessor
            discardSnapshot(at: failed.0.stagedPath)
        }
        queued[job.identifier] = job
        publish(job.identifier)
        return job.notBefore
    }

    /// Copies the item's save state to `published`. Call with `condition` locked, after any
    /// change to what is queued, in flight or failed for it.
    func publish(_ identifier: ItemIdentifier) {
        let latest = newestSaveLocked(identifier)
        let pending = queued[identifier] != nil || inFlight[identifier] != nil
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

    /// A snapshot nothing needs any more: its journal row, then its file.
    func discardSnapshot(at stagedPath: String) {
        journal.drop(stagedPath: stagedPath)
        unlinker.delete(stagedPath)
    }

    /// An upload found the server holding this mount's own earlier save (see
    /// `Job.predecessor`) and goes on from `version`: a save queued meanwhile on the same
    /// base builds on it too. Call with `condition` locked.
    func rebaseFollower(of identifier: ItemIdentifier, from base: String?, to version: String) {
        if var follower = queued[identifier], follower.baseVersion == base {
            follower.baseVersion = version
            queued[identifier] = follower
        }
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
        guard let job = queued.removeValue(forKey: identifier) else { return .none }
        publish(identifier)
        order.removeAll { $0 == identifier }
        condition.broadcast()
        return .claimed(job)
    }

    /// A new file renamed before its upload: it is created under the new name. False when
    /// the file may be on the server already (`mayBeOnServer`): then nothing changes.
    public func retarget(_ identifier: ItemIdentifier, name: String, parent: ItemIdentifier, folders: FolderChain?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if mayBeOnServerLocked(identifier) { return false }
        if var job = queued[identifier] {
            job.name = name
            job.parent = parent
            job.folders = folders
            journal.retarget(job)
            queued[identifier] = job
        }
        if case (var job, let reason)? = failures[identifier] {
            job.name = name
            job.parent = parent
            job.folders = folders
            journal.retarget(job)
            failures[identifier] = (job, reason)
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
        inFlight[identifier] != nil || queued[identifier].map { $0.resumed || $0.predecessor != nil } == true
            || reporting[identifier] != nil || retiredCreations[identifier] != nil
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
        if let job = queued.removeValue(forKey: identifier) {
            order.removeAll { $0 == identifier }
            discard(job)
        }
        if let (job, _) = failures.removeValue(forKey: identifier) { discard(job) }
        publish(identifier)
        if let job = inFlight[identifier] {
            cancelled.insert(identifier)
            journal.drop(job)  // a restart must not resume it either
        }
        if renames.removeValue(forKey: identifier) != nil {
            renameOrder.removeAll { $0 == identifier }
            journal.dropRename(identifier)
        }
        condition.broadcast()
    }

    /// Brackets a delete on the server (see `deleting`); `endDelete` after it, whatever the
    /// outcome (`cancel` follows a delete that worked). An item with saves or a rename in the
    /// journal has the delete journaled first (`UploadJournal.recordDelete`); others have
    /// nothing a restart could bring back, and `rm -r` of 1,000 files is spared 2,000
    /// fsyncs. Throws when the journal cannot be written: the delete must then not be sent.
    public func beginDelete(_ identifier: ItemIdentifier) throws {
        condition.lock()
        defer { condition.unlock() }
        if hasJournaledWork(identifier) {
            try journal.recordDelete(identifier)  // under the lock: a save racing in sees it
            journaledDeletes.insert(identifier)
        }
        deleting.insert(identifier)
    }

    public func endDelete(_ identifier: ItemIdentifier) {
        condition.lock()
        deleting.remove(identifier)
        let journaled = journaledDeletes.remove(identifier) != nil
        condition.unlock()
        if journaled { journal.clearDelete(identifier) }
    }

    /// Call with `condition` locked.
    private func hasJournaledWork(_ identifier: ItemIdentifier) -> Bool {
        queued[identifier] != nil || inFlight[identifier] != nil || failures[identifier] != nil
            || renames[identifier] != nil || renamesInFlight[identifier] != nil
    }

    /// `sitefs retry`: failed saves are queued again.
    public func retryFailed() {
        condition.lock()
        defer { condition.unlock() }
        let failed = failures
        failures = [:]
        for (_, (job, _)) in failed {
            journal.clearFailure(job)
            enqueueLocked(job, delay: .zero)
        }
        condition.broadcast()
    }

    /// `sitefs sync` and unmount: everything waiting out the settle delay is due now.
    public func expedite() {
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        for key in queued.keys { queued[key]!.notBefore = now }
        for key in renames.keys { renames[key]!.notBefore = now }
        condition.broadcast()
    }

    /// Makes a pending upload of the item end with this modification time (the server sets
    /// its own on upload). False when nothing is queued or in flight for it.
    public func applyModified(_ modified: Timestamp, to identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if var job = queued[identifier] {
            job.modified = modified
            queued[identifier] = job
            publish(identifier)
            return true
        }
        guard inFlight[identifier] != nil else { return false }
        lateModified[identifier] = modified
        return true
    }

    /// Stops the workers after the work in hand (a retry waiting out its backoff ends at
    /// once); what is unsent stays in the journal. Waits up to `wait` for them to return:
    /// false if some had not by then.
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
                // Ends with `finishOperation` done, under the lock; nil: put back (offline).
                if let outcome = attemptOperation(operation) {
                    onOperationOutcome?(outcome)
                    doneReporting(operation.identifier)
                }
            }
        }
    }

    private func doneReporting(_ identifier: ItemIdentifier) {
        condition.lock()
        reporting[identifier] = reporting[identifier].flatMap { $0 > 1 ? $0 - 1 : nil }
        condition.broadcast()
        condition.unlock()
    }

    /// The next due piece of work: folder operations and renames first, each kind one at a
    /// time and both in the order made (an operation waits for the renames made before it, a
    /// rename for the operations); a new file waits while either is pending (one of them may
    /// free its name, or make its folder).
    private func next(worker: Int) -> Work? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stopping { return nil }
            let now = clock.now
            if let operation = nextOperationLocked(now: now) { return .operation(operation) }
            // Renames go one at a time, in the order made: a later one may take a name an
            // earlier one frees.
            if renamesInFlight.isEmpty, let first = renameOrder.first, renames[first]!.notBefore <= now,
               !operationPendingLocked(upTo: renames[first]!.afterOperation),
               let rename = takeRenameLocked(first) {
                return .rename(rename)
            }
            let waiting = !renames.isEmpty || !renamesInFlight.isEmpty || !operations.isEmpty || operationInFlight != nil
            if let index = order.firstIndex(where: { identifier in
                inFlight[identifier] == nil && queued[identifier]!.notBefore <= now && !(waiting && identifier.isLocal)
            }) {
                let identifier = order.remove(at: index)
                var job = queued.removeValue(forKey: identifier)!
                if job.createsFile, let parent = job.parent, case .ready(let resolved) = resolveFolderLocked(parent), resolved != parent {
                    job.parent = resolved  // made offline, on the server now
                    journal.retarget(job)
                }
                inFlight[identifier] = job
                sent[identifier] = TransferProgress()
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

    /// Whether a save due at `due` needs the workers woken: not when none waits (each looks
    /// at the queue again when its upload is over) or one wakes by itself by then. Waking
    /// every worker for every save made each of 1,000 quick creates rescan all the others.
    /// Call with `condition` locked.
    private func workersNeedWaking(for due: ContinuousClock.Instant) -> Bool {
        if sleepersWithoutDeadline > 0 { return true }
        guard let earliest = wakeTimes.values.min() else { return false }
        return earliest > due
    }

    /// When the first queued save or rename not due at `now` will be. Call with `condition`
    /// locked. It runs on every wakeup over every queued save: mapping the jobs (large
    /// structs) into arrays here made 1,000 quick creates cost seconds of CPU.
    private func earliestDue(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var due: ContinuousClock.Instant?
        func consider(_ time: ContinuousClock.Instant) {
            if time > now, due.map({ time < $0 }) ?? true { due = time }
        }
        // By index, reading the one field needed.
        for index in queued.values.indices { consider(queued.values[index].notBefore) }
        for index in renames.values.indices { consider(renames.values[index].notBefore) }
        if let first = operations.first { consider(first.notBefore) }
        return due
    }

    /// Bookkeeping once an upload is over. Call with `condition` locked. The journal row
    /// and the snapshot go only when the server holds the content.
    func finish(_ outcome: Outcome) {
        let job = outcome.job
        inFlight[job.identifier] = nil
        sent[job.identifier] = nil
        lateModified[job.identifier] = nil
        reporting[job.identifier, default: 0] += 1
        if case .failed = outcome {} else { dropPredecessor(of: job) }
        switch outcome {
        case .uploaded(_, let item):
            confirm(job, producing: item.version)
            lastUploaded[job.identifier] = (job.baseVersion, item.version)
            // A newer save of the same file was based on what this upload just replaced:
            // it now builds on the version we produced.
            if var follower = queued[job.identifier], follower.baseVersion == job.baseVersion {
                follower.baseVersion = item.version
                queued[job.identifier] = follower
            }
        case .created(_, let item):
            settleCreation(of: job, as: item)
        case .conflicted(_, _, let copy):
            confirm(job, producing: copy.version)
            conflicts.append(Status.Conflict(name: job.name, savedAs: copy.name))
        case .recreated(_, let item):
            confirm(job, producing: item.version)
        case .rescued(_, let copy, let savedAs, let reason):
            // A new file rescued is the copy from now on, as if created under that name.
            if job.createsFile { settleCreation(of: job, as: copy) } else { confirm(job, producing: copy.version) }
            Self.appendBounded(Status.Rescue(name: job.name, savedAs: savedAs, reason: reason), to: &rescues)
        case .failed(_, let error):
            let kept = keptOnThisComputer.removeValue(forKey: job.stagedPath)
            if cancelled.remove(job.identifier) != nil || deletedBeforeRestart.contains(job.identifier) && error.isNotFound {
                discard(job)
            } else if var newer = queued[job.identifier] {
                // Superseded while retrying: it may have reached the server with the answer
                // lost (a reset after the commit, or a restart), so the newer save keeps it
                // as its predecessor, and whatever older one either carried goes.
                let kept = Job.Predecessor(stagedPath: job.stagedPath, size: job.size)
                for older in Set([job.predecessor?.stagedPath, newer.predecessor?.stagedPath].compactMap { $0 }) {
                    discardSnapshot(at: older)
                }
                newer.predecessor = kept
                queued[job.identifier] = newer
            } else if stopping, error.isTransient || { if case .notAuthenticated = error { true } else { false } }() {
                break  // unmounting, not failing: the journal keeps it for the next mount as it was
            } else {
                let reason = error.description + (kept.map { "; your edit is kept on this computer as \($0)" } ?? "")
                journal.failed(job, reason: reason)
                failures[job.identifier] = (job, reason)
            }
        }
        // A delete from before a restart is settled once no save of the item is left: it
        // reached the server (the saves met its 404 and went) or it never did.
        if deletedBeforeRestart.contains(job.identifier), queued[job.identifier] == nil, failures[job.identifier] == nil {
            deletedBeforeRestart.remove(job.identifier)
            journal.clearDelete(job.identifier)
        }
        publish(job.identifier)
        condition.broadcast()
    }

    /// A new file's create made `item`: the save is confirmed and its local identifier
    /// retired, and a newer save of the file (made while this one was sent) becomes a new
    /// version of what was created. Call with `condition` locked.
    private func settleCreation(of job: Job, as item: ProviderItem) {
        var follower = queued.removeValue(forKey: job.identifier)
        if follower != nil {
            order.removeAll { $0 == job.identifier }
            follower!.identifier = item.identifier
            follower!.baseVersion = item.version
        }
        confirm(job, producing: item.version, rekeyed: follower)
        retire(job.identifier, as: (item.identifier, item.version))
        if let follower { enqueueLocked(follower, delay: .zero) }
    }

    /// What `sitefs status` lists of folders made again and saves rescued: the newest
    /// `shownInStatus` (a mount that runs for months must not keep every one).
    static func appendBounded<Entry>(_ entry: Entry, to list: inout [Entry]) {
        list.append(entry)
        if list.count > shownInStatus { list.removeFirst(list.count - shownInStatus) }
    }

    static let shownInStatus = 100

    /// Records what a new file's create made, forgetting the records older than
    /// `retiredCreationsKept`. Call with `condition` locked.
    private func retire(_ local: ItemIdentifier, as created: (identifier: ItemIdentifier, version: String)) {
        let now = clock.now
        let expired = retirements.prefix { now - $0.at > retiredCreationsKept }.count
        for retirement in retirements.prefix(expired) { retiredCreations[retirement.identifier] = nil }
        retirements.removeFirst(expired)
        retiredCreations[local] = created
        retirements.append((local, now))
    }

    private func confirm(_ job: Job, producing version: String, rekeyed follower: Job? = nil) {
        do {
            try journal.confirmed(job, producing: version, rekeyed: follower)
            unlinker.delete(job.stagedPath)
        } catch {
            // Keep the snapshot: the next run re-uploads it (a conflict at worst, never a loss).
            logger.error("journal update failed after uploading \(job.name): \(error)")
        }
    }

    /// While retrying: a newer save of the file makes this attempt moot (the newer one
    /// carries the same base and newer content); stopping ends retries, keeping the file.
    func supersededOrStopping(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping || (queued[job.identifier] != nil && !job.createsFile) || cancelled.contains(job.identifier)
    }

    func isStopping() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }
}
