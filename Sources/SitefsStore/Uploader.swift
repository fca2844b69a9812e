import Foundation
import Logging
import SitefsAPI
import SitefsProvider

/// Uploads saved content in the background, so close() never waits for the network.
///
/// Per file the latest save wins: a save queued behind another of the same file replaces
/// it (the older snapshot is never uploaded after a newer one), and a save arriving while
/// an upload of that file is in flight runs next, based on the version that upload
/// produced. Different files upload in parallel. Transient failures (unreachable, 5xx)
/// are retried with capped exponential backoff for as long as it takes; a verdict (412,
/// 403, ...) keeps the staged snapshot and reports the file failed.
public final class Uploader: @unchecked Sendable {
    public struct Job: Sendable {
        public var identifier: ItemIdentifier
        /// For status lines.
        public var name: String
        public var stagedPath: String
        public var size: Int64
        public var baseVersion: String?
        /// Applied after the upload (the server sets its own time on upload).
        public var modified: Timestamp?

        public init(identifier: ItemIdentifier, name: String, stagedPath: String, size: Int64, baseVersion: String?,
                    modified: Timestamp?) {
            self.identifier = identifier
            self.name = name
            self.stagedPath = stagedPath
            self.size = size
            self.baseVersion = baseVersion
            self.modified = modified
        }
    }

    public enum Outcome: Sendable {
        case uploaded(Job, ProviderItem)
        case failed(Job, ProviderError)
    }

    public struct Status: Sendable, Codable {
        public var pending: Int
        public var uploading: [String]
        public var failed: [Failure]

        public struct Failure: Sendable, Codable {
            public var name: String
            public var reason: String
        }
    }

    private let backend: any DocumentBackend
    private let logger: Logger
    private let onOutcome: @Sendable (Outcome) -> Void
    private let condition = NSCondition()
    // Guarded by `condition`:
    private var queued: [ItemIdentifier: Job] = [:]
    private var order: [ItemIdentifier] = []
    private var inFlight: [ItemIdentifier: Job] = [:]
    private var failures: [ItemIdentifier: (Job, ProviderError)] = [:]
    /// Finished uploads whose outcome is still being reported: waiters wait for these too,
    /// so "idle" means the filesystem has also seen the result.
    private var reporting: [ItemIdentifier: Int] = [:]
    /// Per item, the last upload that succeeded: the version it was based on and the one it
    /// produced. A save based on the former builds on our own upload, so it is rebased.
    private var lastUploaded: [ItemIdentifier: (base: String?, result: String)] = [:]
    /// Modification times set while an upload of the item was in flight, applied after it.
    private var lateModified: [ItemIdentifier: Timestamp] = [:]
    private var stopping = false
    private var threads: [Thread] = []

    public init(backend: any DocumentBackend, parallelism: Int, logger: Logger, onOutcome: @escaping @Sendable (Outcome) -> Void) {
        self.backend = backend
        self.logger = logger
        self.onOutcome = onOutcome
        for index in 0..<max(1, parallelism) {
            // Each thread holds the uploader until `shutdown()` lets it return.
            let thread = Thread { self.work() }
            thread.name = "sitefs-upload-\(index)"
            threads.append(thread)
            thread.start()
        }
    }

    public func enqueue(_ job: Job) {
        var job = job
        condition.lock()
        defer { condition.unlock() }
        if let last = lastUploaded[job.identifier], job.baseVersion == last.base { job.baseVersion = last.result }
        if let replaced = queued[job.identifier] {
            unlink(replaced.stagedPath)
        } else {
            order.append(job.identifier)
        }
        if let failed = failures.removeValue(forKey: job.identifier) { unlink(failed.0.stagedPath) }
        queued[job.identifier] = job
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

    /// Waits until nothing is queued or in flight (for `identifier`, or at all). False on timeout.
    public func waitUntilIdle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
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
                      failed: failures.values.map { Status.Failure(name: $0.0.name, reason: $0.1.description) })
    }

    public func hasPendingWork(_ identifier: ItemIdentifier) -> Bool { !isIdle(identifier) }

    public func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        while let job = next() {
            let outcome = upload(job)  // ends with `finish` done, under the lock
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

    /// Bookkeeping once an upload is over. Call with `condition` locked.
    private func finish(_ job: Job, _ outcome: Outcome) {
        inFlight[job.identifier] = nil
        lateModified[job.identifier] = nil
        reporting[job.identifier, default: 0] += 1
        switch outcome {
        case .uploaded(_, let item):
            unlink(job.stagedPath)
            lastUploaded[job.identifier] = (job.baseVersion, item.version)
            // A newer save of the same file was based on what this upload just replaced:
            // it now builds on the version we produced.
            if var follower = queued[job.identifier], follower.baseVersion == job.baseVersion {
                follower.baseVersion = item.version
                queued[job.identifier] = follower
            }
        case .failed(_, let error):
            if queued[job.identifier] != nil {
                unlink(job.stagedPath)  // a newer snapshot of the same file supersedes this one
            } else {
                failures[job.identifier] = (job, error)
            }
        }
        condition.broadcast()
    }

    /// Uploads with retries, then applies the modification time wanted (also one set while
    /// the upload ran), and records the outcome atomically with the last check for such a
    /// time, so none is lost in between.
    private func upload(_ job: Job) -> Outcome {
        var delay: Duration = .milliseconds(250)
        var item: ProviderItem
        while true {
            do throws(ProviderError) {
                item = try backend.modifyContent(of: job.identifier, baseVersion: job.baseVersion, contentsOf: job.stagedPath)
                break
            } catch where error.isTransient {
                if supersededOrStopping(job) { return finished(job, .failed(job, error)) }
                logger.warning("upload of \(job.name) will be retried in \(delay): \(error)")
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
                delay = min(delay * 2, .seconds(30))
            } catch {
                logger.error("upload of \(job.name) failed; its content is kept in \(job.stagedPath): \(error)")
                return finished(job, .failed(job, error))
            }
        }
        logger.info("uploaded \(job.name) (\(job.size) bytes, version \(item.version))")
        var modified = job.modified
        while true {
            condition.lock()
            if let late = lateModified.removeValue(forKey: job.identifier) { modified = late }
            guard let time = modified else {
                finish(job, .uploaded(job, item))
                condition.unlock()
                return .uploaded(job, item)
            }
            condition.unlock()
            modified = nil
            do throws(ProviderError) {
                item = try backend.update(job.identifier, ItemChanges(modified: time), baseVersion: nil)
            } catch {
                logger.warning("could not set the modification time of \(job.name): \(error)")
            }
        }
    }

    private func finished(_ job: Job, _ outcome: Outcome) -> Outcome {
        condition.lock()
        finish(job, outcome)
        condition.unlock()
        return outcome
    }

    /// While retrying: a newer save of the file makes this attempt moot (the newer one
    /// carries the same base and newer content); stopping ends retries, keeping the file.
    private func supersededOrStopping(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping || queued[job.identifier] != nil
    }
}
