import Foundation
import Logging
import SitefsAPI
import SitefsProvider

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
/// resolved without losing the edit (see UploadAttempt); any other verdict keeps the
/// snapshot and reports the file failed until `retryFailed()`.
///
/// Renames of server files are queued here too (see RenameAttempt), ahead of uploads that
/// create files: a new file may take the name a queued rename frees.
public final class Uploader: @unchecked Sendable {
    let backend: any DocumentBackend
    let logger: Logger
    /// Shown in conflict copies' names.
    let userName: String
    let settleDelay: Duration
    let journal: UploadJournal
    private let onOutcome: @Sendable (Outcome) -> Void
    /// Set once by the filesystem before any rename is queued.
    public var onRenameOutcome: (@Sendable (RenameOutcome) -> Void)?
    let condition = NSCondition()
    // Guarded by `condition`:
    private var queued: [ItemIdentifier: Job] = [:]
    private var order: [ItemIdentifier] = []
    private var inFlight: [ItemIdentifier: Job] = [:]
    private var failures: [ItemIdentifier: (Job, String)] = [:]
    private var conflicts: [Status.Conflict] = []
    var renames: [ItemIdentifier: RenameJob] = [:]
    private var renameOrder: [ItemIdentifier] = []
    var renamesInFlight: [ItemIdentifier: RenameJob] = [:]
    /// Bytes sent so far per upload in flight.
    var sent: [ItemIdentifier: TransferProgress] = [:]
    /// Finished work whose outcome is still being reported: waiters wait for these too,
    /// so "idle" means the filesystem has also seen the result.
    private var reporting: [ItemIdentifier: Int] = [:]
    /// Per item, the last upload that succeeded: the version it was based on and the one it
    /// produced. A save based on the former builds on our own upload, so it is rebased.
    private var lastUploaded: [ItemIdentifier: (base: String?, result: String)] = [:]
    /// Modification times set while an upload of the item was in flight, applied after it.
    var lateModified: [ItemIdentifier: Timestamp] = [:]
    var signInRequired = false
    /// Items deleted here while an upload of theirs was in flight: its outcome is dropped
    /// (a 404 must not bring the file back).
    var cancelled: Set<ItemIdentifier> = []
    /// Items being deleted on the server right now: a 404 for one of their uploads is that
    /// delete, not someone else's, so the file must not be created again.
    var deleting: Set<ItemIdentifier> = []
    var stopping = false
    private var threads: [Thread] = []

    /// Opens the journal and resumes what an earlier run left.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, settleDelay: Duration = .zero,
                userName: String, logger: Logger, onOutcome: @escaping @Sendable (Outcome) -> Void) throws {
        self.backend = backend
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
        for index in 0..<max(1, parallelism) {
            // Each thread holds the uploader until `shutdown()` lets it return.
            let thread = Thread { self.work() }
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
            } else {
                enqueueLocked(job, delay: .zero)
                resumed += 1
            }
        }
        for rename in try journal.pendingRenames() {
            renames[rename.identifier] = rename
            renameOrder.append(rename.identifier)
        }
        if resumed + renames.count > 0 {
            logger.notice("resuming \(resumed) saved uploads and \(renames.count) renames from the journal")
        }
    }

    // MARK: Saves

    /// Records a save durably, then queues it. Throws when the journal cannot be written:
    /// the caller's close()/fsync() must then fail rather than pretend the save is safe.
    public func enqueue(_ job: Job) throws {
        try journal.record(job)
        condition.lock()
        defer { condition.unlock() }
        enqueueLocked(job, delay: settleDelay)
        condition.broadcast()
    }

    private func enqueueLocked(_ job: Job, delay: Duration) {
        var job = job
        job.notBefore = .now + delay
        if let last = lastUploaded[job.identifier], job.baseVersion == last.base { job.baseVersion = last.result }
        if let replaced = queued[job.identifier] {
            if replaced.stagedPath != job.stagedPath {
                journal.drop(replaced)
                unlink(replaced.stagedPath)
            }
        } else {
            order.append(job.identifier)
        }
        if let failed = failures.removeValue(forKey: job.identifier), failed.0.stagedPath != job.stagedPath {
            journal.drop(failed.0)
            unlink(failed.0.stagedPath)
        }
        queued[job.identifier] = job
    }

    /// What `claim` found.
    public enum Claim: Sendable {
        /// Nothing queued for the item.
        case none
        /// Its upload has started: too late to fold into another save; wait for it.
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
        if inFlight[identifier] != nil { return .inFlight }
        guard let job = queued.removeValue(forKey: identifier) else { return .none }
        order.removeAll { $0 == identifier }
        condition.broadcast()
        return .claimed(job)
    }

    /// A new file renamed before its upload: it is created under the new name. False when
    /// its upload is already in flight.
    public func retarget(_ identifier: ItemIdentifier, name: String, parent: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if inFlight[identifier] != nil { return false }
        if var job = queued[identifier] {
            job.name = name
            job.parent = parent
            journal.retarget(job)
            queued[identifier] = job
        }
        if var (job, reason) = failures[identifier] {
            job.name = name
            job.parent = parent
            journal.retarget(job)
            failures[identifier] = (job, reason)
        }
        return true
    }

    /// The newest save recorded for an item (queued, in flight or failed), to restore a new
    /// file's content after a restart.
    public func latestSave(of identifier: ItemIdentifier) -> Job? {
        condition.lock()
        defer { condition.unlock() }
        return queued[identifier] ?? inFlight[identifier] ?? failures[identifier]?.0
    }

    /// Saves of files that are not on the server yet (restored into the mount's view at start).
    public var pendingCreations: [Job] {
        condition.lock()
        defer { condition.unlock() }
        return (Array(queued.values) + Array(inFlight.values) + failures.values.map(\.0)).filter(\.createsFile)
    }

    /// Snapshots the journal still refers to (everything else in staging is debris).
    public var stagedPaths: Set<String> {
        condition.lock()
        defer { condition.unlock() }
        return Set(queued.values.map(\.stagedPath) + inFlight.values.map(\.stagedPath) + failures.values.map(\.0.stagedPath))
    }

    /// The file was deleted here: its pending saves are moot.
    public func cancel(_ identifier: ItemIdentifier) {
        condition.lock()
        defer { condition.unlock() }
        if let job = queued.removeValue(forKey: identifier) {
            order.removeAll { $0 == identifier }
            journal.drop(job)
            unlink(job.stagedPath)
        }
        if let (job, _) = failures.removeValue(forKey: identifier) {
            journal.drop(job)
            unlink(job.stagedPath)
        }
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
    /// outcome (`cancel` follows a delete that worked).
    public func beginDelete(_ identifier: ItemIdentifier) {
        condition.lock()
        deleting.insert(identifier)
        condition.unlock()
    }

    public func endDelete(_ identifier: ItemIdentifier) {
        condition.lock()
        deleting.remove(identifier)
        condition.unlock()
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
        let now = ContinuousClock.now
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
            return true
        }
        guard inFlight[identifier] != nil else { return false }
        lateModified[identifier] = modified
        return true
    }

    /// True when the item has no save queued or in flight.
    public func isIdle(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return queued[identifier] == nil && inFlight[identifier] == nil
    }

    public func hasPendingWork(_ identifier: ItemIdentifier) -> Bool { !isIdle(identifier) }

    /// True when its last save failed for good (kept for `sitefs retry`).
    public func isFailed(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return failures[identifier] != nil && queued[identifier] == nil
    }

    /// True when its save has been sent and the answer is awaited.
    public func isInFlight(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return inFlight[identifier] != nil
    }

    /// Waits until nothing is queued or in flight (for `identifier`, or at all), saves and
    /// renames alike. False on timeout. Work waiting out the settle delay is made due.
    public func waitUntilIdle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        let now = ContinuousClock.now
        if let identifier {
            queued[identifier]?.notBefore = now
            renames[identifier]?.notBefore = now
        } else {
            for key in queued.keys { queued[key]!.notBefore = now }
            for key in renames.keys { renames[key]!.notBefore = now }
        }
        condition.broadcast()
        while true {
            let busy = identifier.map {
                queued[$0] != nil || inFlight[$0] != nil || reporting[$0] != nil || renames[$0] != nil || renamesInFlight[$0] != nil
            } ?? (!queued.isEmpty || !inFlight.isEmpty || !reporting.isEmpty || !renames.isEmpty || !renamesInFlight.isEmpty)
            if !busy { return true }
            if !condition.wait(until: deadline) { return false }
        }
    }

    public var status: Status {
        condition.lock()
        defer { condition.unlock() }
        let progress = inFlight.values.sorted { $0.name < $1.name }.map { job in
            Status.Progress(name: job.name, sent: min(sent[job.identifier]?.sent ?? 0, job.size), total: job.size)
        }
        return Status(pending: queued.count + inFlight.count + renames.count + renamesInFlight.count,
                      uploading: inFlight.values.map(\.name).sorted(), progress: progress,
                      failed: failures.values.map { Status.Failure(name: $0.0.name, reason: $0.1) },
                      conflicts: conflicts, signInRequired: signInRequired)
    }

    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    // MARK: Renames

    /// Queues a rename of a server file (durable when this returns). A rename of the same
    /// file still queued is replaced; one back to where the server has it cancels it.
    public func enqueueRename(_ rename: RenameJob) throws {
        condition.lock()
        defer { condition.unlock() }
        var rename = rename
        if let earlier = renames[rename.identifier] {
            rename.serverName = earlier.serverName
            rename.serverParent = earlier.serverParent
        } else if let sending = renamesInFlight[rename.identifier] {
            rename.serverName = sending.name
            rename.serverParent = sending.parent
        }
        if rename.isNoOp {
            if renames.removeValue(forKey: rename.identifier) != nil {
                renameOrder.removeAll { $0 == rename.identifier }
                journal.dropRename(rename.identifier)
            }
            return
        }
        try journal.recordRename(rename)
        rename.notBefore = .now + settleDelay
        if renames[rename.identifier] == nil { renameOrder.append(rename.identifier) }
        renames[rename.identifier] = rename
        condition.broadcast()
    }

    /// The rename the mount shows but the server does not have yet, if any.
    public func pendingRename(of identifier: ItemIdentifier) -> RenameJob? {
        condition.lock()
        defer { condition.unlock() }
        return renames[identifier] ?? renamesInFlight[identifier]
    }

    /// All renames not applied yet (the mount's view shows them).
    public var pendingRenames: [RenameJob] {
        condition.lock()
        defer { condition.unlock() }
        return renameOrder.compactMap { renames[$0] } + Array(renamesInFlight.values)
    }

    /// Drops a queued rename (the file's rename is folded into something else). False when
    /// it is in flight.
    public func cancelRename(of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if renamesInFlight[identifier] != nil { return false }
        if renames.removeValue(forKey: identifier) != nil {
            renameOrder.removeAll { $0 == identifier }
            journal.dropRename(identifier)
            condition.broadcast()
        }
        return true
    }

    /// Applies every queued rename now and waits for them (before a change made on the server
    /// at once, which must see them). False on timeout.
    public func flushRenames(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        let now = ContinuousClock.now
        for key in renames.keys { renames[key]!.notBefore = now }
        condition.broadcast()
        while !renames.isEmpty || !renamesInFlight.isEmpty {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    // MARK: Workers

    private enum Work {
        case upload(Job)
        case rename(RenameJob)
    }

    private func work() {
        while let work = next() {
            switch work {
            case .upload(let job):
                let outcome = attempt(job)  // ends with `finish` done, under the lock
                onOutcome(outcome)
                doneReporting(job.identifier)
            case .rename(let rename):
                let outcome = attemptRename(rename)  // ends with `finishRename` done, under the lock
                onRenameOutcome?(outcome)
                doneReporting(rename.identifier)
            }
        }
    }

    private func doneReporting(_ identifier: ItemIdentifier) {
        condition.lock()
        reporting[identifier] = reporting[identifier].flatMap { $0 > 1 ? $0 - 1 : nil }
        condition.broadcast()
        condition.unlock()
    }

    /// The next due piece of work: renames first; a new file waits while renames are
    /// pending (one of them may free its name).
    private func next() -> Work? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stopping { return nil }
            let now = ContinuousClock.now
            // Renames go one at a time, in the order made: a later one may take a name an
            // earlier one frees.
            if renamesInFlight.isEmpty, let first = renameOrder.first, renames[first]!.notBefore <= now {
                let index = 0
                let identifier = renameOrder.remove(at: index)
                let rename = renames.removeValue(forKey: identifier)!
                renamesInFlight[identifier] = rename
                return .rename(rename)
            }
            let renaming = !renames.isEmpty || !renamesInFlight.isEmpty
            if let index = order.firstIndex(where: { identifier in
                inFlight[identifier] == nil && queued[identifier]!.notBefore <= now && !(renaming && identifier.isLocal)
            }) {
                let identifier = order.remove(at: index)
                let job = queued.removeValue(forKey: identifier)!
                inFlight[identifier] = job
                sent[identifier] = TransferProgress()
                return .upload(job)
            }
            let due = (queued.values.map(\.notBefore) + renames.values.map(\.notBefore)).filter { $0 > now }.min()
            if let due {
                _ = condition.wait(until: Date().addingTimeInterval(max(0.001, now.duration(to: due).seconds)))
            } else {
                condition.wait()
            }
        }
    }

    /// Bookkeeping once an upload is over. Call with `condition` locked. The journal row
    /// and the snapshot go only when the server holds the content.
    func finish(_ outcome: Outcome) {
        let job = outcome.job
        inFlight[job.identifier] = nil
        sent[job.identifier] = nil
        lateModified[job.identifier] = nil
        reporting[job.identifier, default: 0] += 1
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
            confirm(job, producing: item.version)
            // A newer save of the new file (made while this one was sent) updates what was created.
            if var follower = queued.removeValue(forKey: job.identifier) {
                order.removeAll { $0 == job.identifier }
                follower.identifier = item.identifier
                follower.baseVersion = item.version
                try? journal.record(follower)
                enqueueLocked(follower, delay: .zero)
            }
        case .conflicted(_, _, let copy):
            confirm(job, producing: copy.version)
            conflicts.append(Status.Conflict(name: job.name, savedAs: copy.name))
        case .recreated(_, let item):
            confirm(job, producing: item.version)
        case .failed(_, let error):
            if cancelled.remove(job.identifier) != nil || queued[job.identifier] != nil {
                journal.drop(job)
                unlink(job.stagedPath)  // a newer snapshot of the same file supersedes this one
            } else {
                journal.failed(job, reason: error.description)
                failures[job.identifier] = (job, error.description)
            }
        }
        condition.broadcast()
    }

    /// Bookkeeping once a rename is over. Call with `condition` locked.
    func finishRename(_ outcome: RenameOutcome) {
        let rename: RenameJob
        switch outcome {
        case .renamed(let job, _), .dropped(let job, _): rename = job
        }
        renamesInFlight[rename.identifier] = nil
        reporting[rename.identifier, default: 0] += 1
        if var follower = renames[rename.identifier] {
            // Renamed again meanwhile: that rename starts from where this one left the item.
            if case .renamed(_, let item) = outcome, let parent = item.parent {
                follower.serverName = item.name
                follower.serverParent = parent
                renames[rename.identifier] = follower
                try? journal.recordRename(follower)
            }
        } else {
            journal.dropRename(rename.identifier)
        }
        condition.broadcast()
    }

    private func confirm(_ job: Job, producing version: String) {
        do {
            try journal.confirmed(job, producing: version)
            unlink(job.stagedPath)
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

extension Duration {
    /// As fractional seconds, for Foundation's time APIs.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
