import Foundation
import Logging
import SitefsAPI
import SitefsProvider

/// The locks for editing this mount holds on server documents (see `ProviderLock`).
///
/// A document is locked while a program shows it is editing it: LibreOffice made its lock
/// file beside it (`Reason.lockFile`: taken before the lock file is made, so a document
/// someone else holds is refused then and there), or the file is open for writing
/// (`Reason.writer`: taken in the background; the open never waits for it). A lock is
/// refreshed every third of its timeout while held, and released once no reason is left
/// and the document's pending save has reached the server (`mayRelease`, asked every half
/// second, for at most `longestWaitForSave`: a save sent after the release could meet the
/// next holder's lock and become a conflict copy; the settle delay is not cut short). At
/// unmount every lock is released at once (saves still queued go without it); after a
/// crash the server's timeout ends them.
///
/// No lock while offline or on a server that does not lock: the mount then works as
/// without locks (a save that meets someone's lock later is a conflict copy, as a 412 is).
///
/// Every call to the server is made by one worker thread, in the order asked: a take, its
/// release and a refresh of one document never overtake each other.
public final class EditingLockKeeper: @unchecked Sendable {
    public enum Reason: Sendable { case lockFile, writer }

    public enum Outcome: Sendable, Equatable {
        case taken(ProviderLock)
        /// Someone else holds it (who, when the server said).
        case heldElsewhere(ProviderLock?)
        /// No lock: offline, a server that does not lock, or another failure (why).
        case notTaken(String)
    }

    /// A held lock as `sitefs status` lists it.
    public struct Held: Sendable, Equatable, Codable {
        public var name: String
        public var since: String
        public var expires: String?
    }

    private struct Entry {
        var name: String
        var application: String
        var lock: ProviderLock?
        var lockFile = false
        var writers = 0
        var nextRefresh: ContinuousClock.Instant?
        /// Released once `mayRelease` says so (asked again at `nextReleaseCheck`), or at
        /// `releaseDeadline` whatever it says.
        var nextReleaseCheck: ContinuousClock.Instant?
        var releaseDeadline: ContinuousClock.Instant?
        /// The take's answer was lost in transit: the server may hold the lock (the backend
        /// keeps what it sent), so the release is sent all the same.
        var uncertain = false
        /// A take is queued or on its way (whether or not its reasons are still there).
        var taking = false
        var wanted: Bool { lockFile || writers > 0 }
    }

    private enum Job {
        case take(ItemIdentifier, reply: Reply?)
        case release(ItemIdentifier)
        case refresh(ItemIdentifier)
    }

    /// Where a caller waiting for a take finds its outcome.
    private final class Reply: @unchecked Sendable {
        var outcome: Outcome?
    }

    private let backend: any DocumentBackend
    private let holderName: String
    private let device: String
    private let timeout: Duration
    private let clock: ContinuousClock
    private let logger: Logger
    /// Whether nothing of the document waits to reach the server (no save queued or in
    /// flight): its lock may go.
    private let mayRelease: @Sendable (ItemIdentifier) -> Bool

    /// How long a released lock waits for the document's save before it goes anyway.
    static let longestWaitForSave: Duration = .seconds(600)
    static let releaseCheckInterval: Duration = .milliseconds(500)

    /// Guards everything below. Lock order: a leaf: never held across a call to the server
    /// or `mayRelease`.
    private let condition = NSCondition()
    private var entries: [ItemIdentifier: Entry] = [:]
    private var jobs: [Job] = []
    /// Set once a server that answered a lock request with a refusal says it does not lock
    /// (asked only then: a server out of reach says nothing definite about itself).
    private var unsupported: String?
    private var stopping = false
    private var worker: Thread?

    /// `timeout`: how long a lock lasts unless refreshed (what a crashed mount's locks
    /// outlive it by).
    public init(backend: any DocumentBackend, holderName: String, device: String, timeout: Duration,
                logger: Logger, mayRelease: @escaping @Sendable (ItemIdentifier) -> Bool) {
        self.backend = backend
        self.holderName = holderName
        self.device = device
        self.timeout = max(timeout, .seconds(1))
        self.clock = ContinuousClock()
        self.logger = logger
        self.mayRelease = mayRelease
    }

    /// Starts the worker, once; the first lock asked for starts it too.
    public func start() {
        condition.lock()
        defer { condition.unlock() }
        startLocked()
    }

    /// Called with `condition` held.
    private func startLocked() {
        guard worker == nil, !stopping else { return }
        let thread = Thread { [self] in run() }
        thread.name = "sitefs-locks"
        worker = thread
        thread.start()
    }

    // MARK: What the core asks

    /// Takes the lock on `document` for `reason` and waits for the answer (at most `wait`).
    public func acquire(_ document: ProviderItem, for reason: Reason, application: String, wait: Duration) -> Outcome {
        let reply = Reply()
        condition.lock()
        defer { condition.unlock() }
        if let why = unsupported { return .notTaken(why) }
        guard enqueueTake(document, for: reason, application: application, reply: reply) else {
            return .notTaken("the mount is stopping")
        }
        let deadline = Date().addingTimeInterval(Double(wait.components.seconds))
        while reply.outcome == nil {
            guard condition.wait(until: deadline) else { return .notTaken("the server did not answer in time") }
        }
        return reply.outcome!
    }

    /// Takes the lock on `document` for `reason` without waiting.
    public func acquireInBackground(_ document: ProviderItem, for reason: Reason, application: String) {
        condition.lock()
        defer { condition.unlock() }
        if unsupported != nil { return }
        _ = enqueueTake(document, for: reason, application: application, reply: nil)
    }

    /// One reason for the lock on `document` is gone; with the last, the lock goes.
    public func release(_ document: ItemIdentifier, for reason: Reason) {
        condition.lock()
        defer { condition.unlock() }
        guard var entry = entries[document] else { return }
        switch reason {
        case .lockFile: entry.lockFile = false
        case .writer: entry.writers = max(0, entry.writers - 1)
        }
        entries[document] = entry
        if !entry.wanted {
            jobs.append(.release(document))
            condition.broadcast()
        }
    }

    /// The locks held now, by document name.
    public var held: [Held] {
        condition.lock()
        defer { condition.unlock() }
        return entries.values.compactMap { entry in
            entry.lock.map { Held(name: entry.name, since: $0.since.rfc3339, expires: $0.expires?.rfc3339) }
        }.sorted { $0.name < $1.name }
    }

    /// Whether this mount holds the lock on `document` or is taking it (a reason is
    /// recorded): what the server reports of that lock meanwhile is this mount's own.
    public func holdsOrTakes(_ document: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let entry = entries[document] else { return false }
        return entry.lock != nil || entry.wanted || entry.uncertain
    }

    /// Waits, up to `wait`, while this mount is taking the lock on `document` (a writer's
    /// take queued or on its way): a save sent meanwhile would meet this mount's own lock
    /// without its token and become a conflict copy. Saves go as soon as they are closed, so
    /// one often comes right behind the open that asked for the lock.
    public func waitWhileTaking(_ document: ItemIdentifier, upTo wait: Duration) {
        let deadline = Date().addingTimeInterval(wait.seconds)
        condition.lock()
        defer { condition.unlock() }
        while let entry = entries[document], entry.taking, !stopping {
            if !condition.wait(until: deadline) { return }
        }
    }

    /// The lock this mount holds on `document`, if any.
    public func holds(_ document: ItemIdentifier) -> ProviderLock? {
        condition.lock()
        defer { condition.unlock() }
        return entries[document]?.lock
    }

    /// At unmount: what is queued runs, then every lock held is released (each within the
    /// backend's timeouts), and the worker ends.
    public func stop() {
        condition.lock()
        stopping = true
        for (document, entry) in entries where entry.lock != nil || entry.uncertain {
            entries[document]?.lockFile = false
            entries[document]?.writers = 0
            jobs.append(.release(document))
        }
        condition.broadcast()
        let thread = worker
        condition.unlock()
        guard thread != nil else { return }
        condition.lock()
        while worker != nil { condition.wait() }
        condition.unlock()
    }

    /// Records the reason and queues a take. Called with `condition` held.
    private func enqueueTake(_ document: ProviderItem, for reason: Reason, application: String, reply: Reply?) -> Bool {
        guard !stopping else { return false }
        var entry = entries[document.identifier] ?? Entry(name: document.name, application: application)
        entry.name = document.name
        entry.nextReleaseCheck = nil  // wanted again: kept
        entry.releaseDeadline = nil
        switch reason {
        case .lockFile: entry.lockFile = true
        case .writer: entry.writers += 1
        }
        entries[document.identifier] = entry
        if let lock = entry.lock {
            reply?.outcome = .taken(lock)  // held already, for another reason
            return true
        }
        entries[document.identifier]?.taking = true
        jobs.append(.take(document.identifier, reply: reply))
        startLocked()
        condition.broadcast()
        return true
    }

    // MARK: The worker

    private func run() {
        while let job = nextJob() {
            switch job {
            case .take(let document, let reply): take(document, reply: reply)
            case .release(let document): releaseNow(document)
            case .refresh(let document): refresh(document)
            }
        }
        condition.lock()
        worker = nil
        condition.broadcast()
        condition.unlock()
    }

    /// The next job, waiting for one or for the next refresh; nil once stopping with nothing
    /// left to do.
    private func nextJob() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if !jobs.isEmpty { return jobs.removeFirst() }
            if stopping { return nil }
            let now = clock.now
            let checks = entries.compactMap { document, entry in entry.nextReleaseCheck.map { (document, $0) } }
            if let (document, _) = checks.first(where: { $0.1 <= now }) {
                entries[document]?.nextReleaseCheck = nil
                return .release(document)
            }
            let due = entries.compactMap { document, entry in entry.nextRefresh.map { (document, $0) } }
            if let (document, _) = due.first(where: { $0.1 <= now }) {
                entries[document]?.nextRefresh = nil  // until the refresh answers
                return .refresh(document)
            }
            if let earliest = (due.map(\.1) + checks.map(\.1)).min() {
                let seconds = Double((earliest - now).components.seconds) + Double((earliest - now).components.attoseconds) / 1e18
                _ = condition.wait(until: Date().addingTimeInterval(max(seconds, 0.01)))
            } else {
                condition.wait()
            }
        }
    }

    private func request(for document: ItemIdentifier) -> LockRequest? {
        condition.lock()
        defer { condition.unlock() }
        return entries[document].map { LockRequest(holderName: holderName, device: device, application: $0.application, timeout: timeout) }
    }

    /// After a lock request was refused (not for someone's lock, not in transit): whether
    /// the server locks at all. One that does not is remembered, and said once; true then.
    private func learnWhetherTheServerLocks() -> Bool {
        guard case .unsupported(let reason) = backend.lockSupport else { return false }
        condition.lock()
        let first = unsupported == nil
        unsupported = reason
        condition.unlock()
        if first { logger.notice("the server does not lock documents (\(reason)): documents opened here are not locked for others") }
        return true
    }

    private func answer(_ reply: Reply?, _ outcome: Outcome) {
        guard let reply else { return }
        condition.lock()
        reply.outcome = outcome
        condition.broadcast()
        condition.unlock()
    }

    private func take(_ document: ItemIdentifier, reply: Reply?) {
        // Whatever it comes to, a save waiting for it (`waitWhileTaking`) looks again.
        defer {
            condition.lock()
            entries[document]?.taking = false
            condition.broadcast()
            condition.unlock()
        }
        guard let request = request(for: document) else {
            return answer(reply, .notTaken("released before it was taken"))
        }
        condition.lock()
        let known = unsupported
        condition.unlock()
        if let known {
            forgetEntry(document)
            return answer(reply, .notTaken(known))
        }
        do throws(ProviderError) {
            let lock = try backend.lock(document, request)
            condition.lock()
            let stillWanted = entries[document]?.wanted ?? false
            if stillWanted {
                entries[document]?.lock = lock
                entries[document]?.nextRefresh = clock.now + timeout / 3
            } else {
                entries[document]?.lock = lock
                jobs.insert(.release(document), at: 0)  // its reasons went while it was on its way
            }
            condition.unlock()
            logger.info("locked \(request.application.isEmpty ? "" : "for \(request.application): ")\(document)")
            answer(reply, .taken(lock))
        } catch .locked(let holder) {
            forgetEntry(document)
            logger.info("\(document) is locked for editing by \(holder?.description ?? "someone else")")
            answer(reply, .heldElsewhere(holder))
        } catch where error.isTransient {
            condition.lock()
            entries[document]?.uncertain = true
            condition.unlock()
            if !error.isUnreachable { logger.warning("lock \(document): \(error)") }
            answer(reply, .notTaken(error.description))
        } catch {
            forgetEntry(document)
            if !learnWhetherTheServerLocks() { logger.warning("lock \(document): \(error)") }
            answer(reply, .notTaken(error.description))
        }
    }

    private func forgetEntry(_ document: ItemIdentifier) {
        condition.lock()
        entries[document] = nil
        condition.unlock()
    }

    private func releaseNow(_ document: ItemIdentifier) {
        condition.lock()
        guard let entry = entries[document], !entry.wanted else {
            condition.unlock()
            return  // wanted again meanwhile (or gone)
        }
        let stopping = self.stopping
        condition.unlock()
        guard entry.lock != nil || entry.uncertain else { return forgetEntry(document) }
        if !stopping, !mayRelease(document) {
            // Its save is still on its way: asked again shortly (it keeps being refreshed).
            condition.lock()
            let deadline = entries[document]?.releaseDeadline ?? clock.now + Self.longestWaitForSave
            if clock.now < deadline {
                entries[document]?.releaseDeadline = deadline
                entries[document]?.nextReleaseCheck = clock.now + Self.releaseCheckInterval
                condition.unlock()
                return
            }
            condition.unlock()
            logger.warning("the save of \(entry.name) has not reached the server; its lock is released anyway")
        }
        condition.lock()
        entries[document]?.nextRefresh = nil
        condition.unlock()
        do throws(ProviderError) {
            try backend.unlock(document)
            if entry.lock != nil { logger.info("released the lock on \(entry.name)") }
        } catch {
            // The server's timeout ends it.
            logger.warning("release the lock on \(entry.name): \(error); it ends at its timeout")
        }
        condition.lock()
        if let current = entries[document], !current.wanted { entries[document] = nil }
        condition.unlock()
    }

    private func refresh(_ document: ItemIdentifier) {
        guard let request = request(for: document) else { return }
        do throws(ProviderError) {
            let lock = try backend.lock(document, request)
            condition.lock()
            if entries[document]?.lock != nil {
                entries[document]?.lock = lock
                entries[document]?.nextRefresh = clock.now + timeout / 3
            }
            condition.unlock()
        } catch where error.isTransient {
            // Tried again soon; the lock lasts its timeout meanwhile.
            condition.lock()
            if entries[document]?.lock != nil { entries[document]?.nextRefresh = clock.now + min(timeout / 6, .seconds(10)) }
            condition.unlock()
        } catch {
            logger.warning("the lock on \(document) could not be kept: \(error)")
            condition.lock()
            entries[document]?.lock = nil
            condition.unlock()
        }
    }
}
