import SitefsAPI
import SitefsProvider

/// The saves the uploader holds, per file: at most one queued (the newest, waiting for its
/// settle delay or its turn), at most one in flight and at most one failed (kept for
/// `sitefs retry`). A value guarded by the uploader's `condition`; it does no I/O: what a
/// change leaves unneeded (older snapshots) is returned for the uploader to discard through
/// the journal.
///
/// What holds:
/// - `order` has each key of `queued` exactly once, in the order the file was first queued
///   (a newer save of a queued file keeps its place), and nothing else.
/// - A file is never both queued and failed: queueing a newer save ends the failure.
/// - `progress` and `lateModified` have entries only for files in flight.
/// - `dueTimes` has exactly the keys of `queued`, each its job's `notBefore`: the workers scan
///   when work is due on every wakeup, over a burst of 1,000 new files waiting out their
///   delay, and reading the time from the job itself copied the whole job each time.
/// - `lastUploaded` is what the last confirmed upload of a file was based on and produced:
///   a save based on the former is rebased onto the latter when queued, because it builds
///   on this mount's own upload, not on someone else's edit.
struct SaveQueue {
    private(set) var queued: [ItemIdentifier: SaveJob] = [:]
    private(set) var order: [ItemIdentifier] = []
    private var dueTimes: [ItemIdentifier: ContinuousClock.Instant] = [:]
    private(set) var inFlight: [ItemIdentifier: SaveJob] = [:]
    private(set) var failures: [ItemIdentifier: (job: SaveJob, reason: String)] = [:]
    /// Bytes sent so far per upload in flight.
    private(set) var progress: [ItemIdentifier: TransferProgress] = [:]
    /// Modification times set while an upload of the file was in flight, applied after it.
    private var lateModified: [ItemIdentifier: Timestamp] = [:]
    /// Modes set while an upload of the file was in flight, applied after it.
    private var lateModes: [ItemIdentifier: UInt16] = [:]
    var lastUploaded: [ItemIdentifier: (base: String?, result: String)] = [:]

    /// Queues `job` due at `due`, replacing an older queued save of the same file, and
    /// returns the snapshots no save needs any more. The oldest save resumed from the journal
    /// is kept as the newer one's `predecessor` instead: it is the one that may have been in
    /// flight when the last run ended (see `SaveJob.predecessor`).
    mutating func enqueue(_ job: SaveJob, due: ContinuousClock.Instant, resuming: Bool = false) -> [String] {
        var job = job
        var unneeded: [String] = []
        job.notBefore = due
        job.resumed = resuming
        if let last = lastUploaded[job.identifier], job.baseVersion == last.base { job.baseVersion = last.result }
        if let replaced = queued[job.identifier] {
            if replaced.stagedPath != job.stagedPath {
                if replaced.resumed && replaced.predecessor == nil {
                    job.predecessor = SaveJob.Predecessor(stagedPath: replaced.stagedPath, size: replaced.size)
                } else {
                    job.predecessor = job.predecessor ?? replaced.predecessor
                    unneeded.append(replaced.stagedPath)
                }
            }
        } else {
            order.append(job.identifier)
        }
        if let failed = failures.removeValue(forKey: job.identifier), failed.job.stagedPath != job.stagedPath {
            job.predecessor = job.predecessor ?? failed.job.predecessor
            unneeded.append(failed.job.stagedPath)
        }
        queued[job.identifier] = job
        dueTimes[job.identifier] = due
        return unneeded
    }

    /// The newest save of a file: queued, else in flight, else failed.
    func newest(of identifier: ItemIdentifier) -> SaveJob? {
        queued[identifier] ?? inFlight[identifier] ?? failures[identifier]?.job
    }

    /// Queued or being sent (not only failed).
    func isPending(_ identifier: ItemIdentifier) -> Bool { queued[identifier] != nil || inFlight[identifier] != nil }

    /// Every save held: queued, in flight and failed.
    var all: [SaveJob] { Array(queued.values) + Array(inFlight.values) + failures.values.map(\.job) }

    var isIdle: Bool { queued.isEmpty && inFlight.isEmpty }

    /// Takes a file's queued save out of the queue.
    mutating func removeQueued(_ identifier: ItemIdentifier) -> SaveJob? {
        guard let job = queued.removeValue(forKey: identifier) else { return nil }
        dueTimes[identifier] = nil
        order.removeAll { $0 == identifier }
        return job
    }

    /// Changes a queued save in place (its place in the order stays). False when none is queued.
    @discardableResult
    mutating func updateQueued(_ identifier: ItemIdentifier, _ change: (inout SaveJob) -> Void) -> Bool {
        guard var job = queued[identifier] else { return false }
        change(&job)
        queued[identifier] = job
        dueTimes[identifier] = job.notBefore
        return true
    }

    /// Changes a failed save in place. False when none failed.
    @discardableResult
    mutating func updateFailed(_ identifier: ItemIdentifier, _ change: (inout SaveJob) -> Void) -> Bool {
        guard var failed = failures[identifier] else { return false }
        change(&failed.job)
        failures[identifier] = failed
        return true
    }

    /// A queued save of `identifier` is due by `time` at the latest. False when none is queued.
    mutating func bringForward(_ identifier: ItemIdentifier, to time: ContinuousClock.Instant) -> Bool {
        guard let due = dueTimes[identifier] else { return false }
        if time < due {
            queued[identifier]!.notBefore = time
            dueTimes[identifier] = time
        }
        return true
    }

    /// Everything queued (for `identifier`, or every file) is due at `now`.
    mutating func makeDue(at now: ContinuousClock.Instant, only identifier: ItemIdentifier? = nil) {
        queued.makeDue(at: now, only: identifier)
        for key in identifier.map({ [$0] }) ?? Array(dueTimes.keys) where dueTimes[key] != nil { dueTimes[key] = now }
    }

    /// The first queued save that may go at `now`, taken out of the queue: not while another
    /// save of the same file is in flight (one upload per file at a time), and no new file's
    /// create while `holdingCreations` (a rename or folder operation ahead may free its name
    /// or make its folder). Hand it to `beginUpload` once ready to send.
    mutating func takeDue(at now: ContinuousClock.Instant, holdingCreations: Bool) -> SaveJob? {
        guard let index = order.firstIndex(where: { identifier in
            !(holdingCreations && identifier.isLocal) && inFlight[identifier] == nil && dueTimes[identifier]! <= now
        }) else { return nil }
        let identifier = order.remove(at: index)
        dueTimes[identifier] = nil
        return queued.removeValue(forKey: identifier)
    }

    mutating func beginUpload(_ job: SaveJob) {
        inFlight[job.identifier] = job
        progress[job.identifier] = TransferProgress()
    }

    /// The upload of `identifier` is over, whatever its outcome.
    mutating func endUpload(_ identifier: ItemIdentifier) {
        inFlight[identifier] = nil
        progress[identifier] = nil
        lateModified[identifier] = nil
        lateModes[identifier] = nil
    }

    /// A time to apply after the upload in flight. False when none is in flight.
    mutating func setLateModified(_ time: Timestamp, for identifier: ItemIdentifier) -> Bool {
        guard inFlight[identifier] != nil else { return false }
        lateModified[identifier] = time
        return true
    }

    mutating func takeLateModified(_ identifier: ItemIdentifier) -> Timestamp? {
        lateModified.removeValue(forKey: identifier)
    }

    /// A mode to apply after the upload in flight. False when none is in flight.
    mutating func setLateMode(_ mode: UInt16, for identifier: ItemIdentifier) -> Bool {
        guard inFlight[identifier] != nil else { return false }
        lateModes[identifier] = mode
        return true
    }

    mutating func takeLateMode(_ identifier: ItemIdentifier) -> UInt16? {
        lateModes.removeValue(forKey: identifier)
    }

    mutating func fail(_ job: SaveJob, reason: String) { failures[job.identifier] = (job, reason) }

    mutating func removeFailure(_ identifier: ItemIdentifier) -> SaveJob? { failures.removeValue(forKey: identifier)?.job }

    mutating func removeAllFailures() -> [SaveJob] {
        defer { failures = [:] }
        return failures.values.map(\.job)
    }

    /// A queued save based on `base` now builds on `version` (this mount's own upload).
    mutating func rebaseQueued(_ identifier: ItemIdentifier, from base: String?, to version: String) {
        if let follower = queued[identifier], follower.baseVersion == base { queued[identifier]!.baseVersion = version }
    }

    /// When the first queued job not due at `now` will be.
    func earliestDue(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var earliest: ContinuousClock.Instant?
        for time in dueTimes.values where time > now && earliest.map({ time < $0 }) ?? true { earliest = time }
        return earliest
    }
}
