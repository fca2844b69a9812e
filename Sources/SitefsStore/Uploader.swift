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
/// produced. Different files upload in parallel. Transient failures (unreachable, 5xx,
/// 429, an expired sign-in) are retried with capped exponential backoff for as long as it
/// takes; conflicts and server-side deletions are resolved without losing the edit (see
/// UploadAttempt); any other verdict keeps the snapshot and reports the file failed until
/// `retryFailed()`.
public final class Uploader: @unchecked Sendable {
    let backend: any DocumentBackend
    let logger: Logger
    /// Shown in conflict copies' names.
    let userName: String
    private let journal: UploadJournal
    private let onOutcome: @Sendable (Outcome) -> Void
    let condition = NSCondition()
    // Guarded by `condition`:
    private var queued: [ItemIdentifier: Job] = [:]
    private var order: [ItemIdentifier] = []
    private var inFlight: [ItemIdentifier: Job] = [:]
    private var failures: [ItemIdentifier: (Job, String)] = [:]
    private var conflicts: [Status.Conflict] = []
    /// Finished uploads whose outcome is still being reported: waiters wait for these too,
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
    var stopping = false
    private var threads: [Thread] = []

    /// Opens the journal in `cacheDirectory` and resumes what an earlier run left.
    public init(backend: any DocumentBackend, journalPath: String, parallelism: Int, userName: String, logger: Logger,
                onOutcome: @escaping @Sendable (Outcome) -> Void) throws {
        self.backend = backend
        self.logger = logger
        self.userName = userName
        self.onOutcome = onOutcome
        journal = try UploadJournal(path: journalPath)
        lastUploaded = try journal.uploadedVersions()
        try resume()
        for index in 0..<max(1, parallelism) {
            // Each thread holds the uploader until `shutdown()` lets it return.
            let thread = Thread { self.work() }
            thread.name = "sitefs-upload-\(index)"
            threads.append(thread)
            thread.start()
        }
    }

    /// Queues the journal's saves again: per file the newest, failed ones as failures.
    private func resume() throws {
        var resumed = 0
        for (job, failure) in try journal.unfinished() {
            if let failure {
                failures[job.identifier] = (job, failure)
            } else {
                enqueueLocked(job)
                resumed += 1
            }
        }
        if resumed > 0 { logger.notice("resuming \(resumed) saved uploads from the journal") }
    }

    /// Records a save durably, then queues it. Throws when the journal cannot be written:
    /// the caller's close()/fsync() must then fail rather than pretend the save is safe.
    public func enqueue(_ job: Job) throws {
        try journal.record(job)
        condition.lock()
        defer { condition.unlock() }
        enqueueLocked(job)
        condition.broadcast()
    }

    private func enqueueLocked(_ job: Job) {
        var job = job
        if let last = lastUploaded[job.identifier], job.baseVersion == last.base { job.baseVersion = last.result }
        if let replaced = queued[job.identifier] {
            journal.drop(replaced)
            unlink(replaced.stagedPath)
        } else {
            order.append(job.identifier)
        }
        if let failed = failures.removeValue(forKey: job.identifier), failed.0.stagedPath != job.stagedPath {
            journal.drop(failed.0)
            unlink(failed.0.stagedPath)
        }
        queued[job.identifier] = job
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
        condition.broadcast()
    }

    /// `sitefs retry`: failed saves are queued again.
    public func retryFailed() {
        condition.lock()
        defer { condition.unlock() }
        let failed = failures
        failures = [:]
        for (_, (job, _)) in failed {
            journal.clearFailure(job)
            enqueueLocked(job)
        }
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

    /// True when the item has nothing queued or in flight.
    public func isIdle(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return queued[identifier] == nil && inFlight[identifier] == nil
    }

    public func hasPendingWork(_ identifier: ItemIdentifier) -> Bool { !isIdle(identifier) }

    /// Waits until nothing is queued or in flight (for `identifier`, or at all). False on timeout.
    public func waitUntilIdle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while true {
            let busy = identifier.map { queued[$0] != nil || inFlight[$0] != nil || reporting[$0] != nil }
                ?? (!queued.isEmpty || !inFlight.isEmpty || !reporting.isEmpty)
            if !busy { return true }
            if !condition.wait(until: deadline) { return false }
        }
    }

    public var status: Status {
        condition.lock()
        defer { condition.unlock() }
        return Status(pending: queued.count + inFlight.count, uploading: inFlight.values.map(\.name).sorted(),
                      failed: failures.values.map { Status.Failure(name: $0.0.name, reason: $0.1) },
                      conflicts: conflicts, signInRequired: signInRequired)
    }

    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        while let job = next() {
            let outcome = attempt(job)  // ends with `finish` done, under the lock
            onOutcome(outcome)
            condition.lock()
            reporting[job.identifier] = reporting[job.identifier].flatMap { $0 > 1 ? $0 - 1 : nil }
            condition.broadcast()
            condition.unlock()
        }
    }

    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if stopping { return nil }
            if let index = order.firstIndex(where: { inFlight[$0] == nil }) {
                let identifier = order.remove(at: index)
                let job = queued.removeValue(forKey: identifier)!
                inFlight[identifier] = job
                return job
            }
            condition.wait()
        }
    }

    /// Bookkeeping once an upload is over. Call with `condition` locked. The journal row
    /// and the snapshot go only when the server holds the content.
    func finish(_ outcome: Outcome) {
        let job = outcome.job
        inFlight[job.identifier] = nil
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
        return stopping || queued[job.identifier] != nil || cancelled.contains(job.identifier)
    }
}

extension Duration {
    /// As fractional seconds, for Foundation's time APIs.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
