import Logging
import SitefsAPI
import SitefsProvider
import SitefsStore
import Synchronization
import SitefsConcurrency

/// Whether the server can be reached, as the mount's own requests found it.
///
/// Offline starts when requests fail in transit (`ProviderError.unreachable`: refused,
/// timed out, dropped) `failuresToGoOffline` times in a row, and ends when any request gets
/// an answer from the server, whatever the answer. One dropped connection is not enough: a
/// flaky network would otherwise fail everything for a moment after each drop. While offline, requests are not sent but fail at once with
/// `ProviderError.offline`, so a program opening an online-only file, or a `stat` of a stale
/// item, learns it in a moment instead of after the whole I/O timeout, again and again.
/// One request every `probeInterval` is still let through: it is how the mount finds the
/// server back, on the next thing the user does, and the change feed's rounds ask too
/// (`ChangeFeedPoller`), so reconnecting needs nobody to act.
///
/// Time is the mount's clock (manual in tests), so "a second has passed, the next request
/// may try" is a step a test takes.
public final class ConnectionMonitor: Sendable {
    private struct State {
        /// Since when (wall time, for people) the server has not been reachable; nil online.
        var offlineSince: Timestamp?
        /// When (mount clock) the last request let through while offline was sent.
        var lastProbe: ContinuousClock.Instant?
        /// A request let through while offline is on its way: the others wait for its answer
        /// by failing at once, not by sending their own.
        var probing = false
        /// Counts the returns to online, so a retry sleeping out its backoff can end early.
        var reconnections = 0
        /// Requests failed in transit since the last answer from the server.
        var failuresInARow = 0
    }

    /// Lock order: a leaf; nothing is taken or called under it.
    private let state = Mutex(State())
    /// Called (on the thread whose request found the server back, no lock held) each time
    /// the mount comes back online: what waited for the server goes now. Lock order: a leaf.
    private let reconnectHandlers = Mutex<[@Sendable () -> Void]>([])
    /// Whether the server refused the mount's sign-in last time it answered. Lock order: a leaf.
    private let signIn = Mutex(false)
    /// Called (no lock held) each time the server starts refusing the sign-in, once per
    /// spell: the user has to `sitefs login` again. Lock order: a leaf.
    private let signInHandlers = Mutex<[@Sendable () -> Void]>([])
    private let clock: MountClock
    private let logger: Logger
    /// How often a request is let through while offline.
    public let probeInterval: Duration
    /// Failures in transit in a row that make the mount offline.
    static let failuresToGoOffline = 2

    public init(clock: MountClock, probeInterval: Duration = .seconds(1), logger: Logger) {
        self.clock = clock
        self.probeInterval = probeInterval
        self.logger = logger
    }

    /// Nil online; else since when the server has not been reachable.
    public var offlineSince: Timestamp? { state.withLock { $0.offlineSince } }

    /// Adds work to do whenever the mount comes back online (see `reconnectHandlers`).
    public func whenReconnected(_ handler: @escaping @Sendable () -> Void) {
        reconnectHandlers.withLock { $0.append(handler) }
    }

    /// Adds work to do whenever the server starts refusing the mount's sign-in (see
    /// `signInHandlers`).
    public func whenSignInRequired(_ handler: @escaping @Sendable () -> Void) {
        signInHandlers.withLock { $0.append(handler) }
    }

    /// Whether the server refused the sign-in on its last answer.
    public var signInRequired: Bool { signIn.withLock { $0 } }

    /// How many times the mount came back online: a waiter notes it, then asks whether it
    /// moved (`cameBack(since:)`).
    public var reconnections: Int { state.withLock { $0.reconnections } }

    public func cameBack(since reconnections: Int) -> Bool { self.reconnections != reconnections }

    /// Whether a request may go to the server now. Online: yes. Offline: only the first one
    /// after `probeInterval` (its outcome must then be reported through `finished`); for the
    /// others, the error to fail with at once.
    func admit() -> Admission {
        state.withLock { state in
            guard let since = state.offlineSince else { return .send }
            let now = clock.now
            if !state.probing, state.lastProbe.map({ $0.duration(to: now) >= probeInterval }) ?? true {
                state.probing = true
                state.lastProbe = now
                return .probe
            }
            return .refuse(.offline(since: since))
        }
    }

    enum Admission {
        case send
        /// Sent while offline, to find out whether the server is back.
        case probe
        case refuse(ProviderError)
    }

    /// What a request that was sent came to: a failure in transit starts (or continues)
    /// being offline; any answer from the server ends it (a success only if `countsSuccess`:
    /// the call may not have asked the server).
    func finished(_ admission: Admission, failure: ProviderError?, countsSuccess: Bool = true) {
        noteSignIn(failure: failure, countsSuccess: countsSuccess)
        let change: Change? = state.withLock { state in
            if case .probe = admission { state.probing = false }
            if failure == nil && !countsSuccess { return nil }
            switch failure {
            case .unreachable?:
                state.failuresInARow += 1
                guard state.offlineSince == nil, state.failuresInARow >= Self.failuresToGoOffline else { return nil }
                state.offlineSince = .now()
                state.lastProbe = clock.now
                return .wentOffline(state.offlineSince!)
            case .cancelled?, .offline?, .localIO?:
                return nil  // says nothing about the server
            default:
                state.failuresInARow = 0
                guard let since = state.offlineSince else { return nil }
                state.offlineSince = nil
                state.reconnections += 1
                return .cameBack(since)
            }
        }
        switch change {
        case .wentOffline(let since)?:
            logger.warning("offline since \(since.rfc3339): the server is unreachable; what needs it fails at once (Network is unreachable), saves and new files are kept and sent when it is back")
        case .cameBack(let since)?:
            let seconds = Double(Timestamp.now().microseconds - since.microseconds) / 1_000_000
            logger.notice("the server is reachable again (offline since \(since.rfc3339), \(Int(seconds.rounded())) s)")
            for handler in reconnectHandlers.withLock({ $0 }) { handler() }
        case nil:
            break
        }
    }

    /// A refused sign-in starts a spell that any accepted request ends; the handlers hear
    /// of each spell's start once, however many requests meet it.
    private func noteSignIn(failure: ProviderError?, countsSuccess: Bool) {
        let refused: Bool
        switch failure {
        case .notAuthenticated?: refused = true
        case nil where countsSuccess: refused = false
        default: return  // says nothing about the sign-in
        }
        let started = signIn.withLock { required in
            defer { required = refused }
            return refused && !required
        }
        guard started else { return }
        logger.error("the server no longer accepts this mount's sign-in: run `sitefs login` again; saves are kept and sent once it is done")
        for handler in signInHandlers.withLock({ $0 }) { handler() }
    }

    private enum Change {
        case wentOffline(Timestamp)
        case cameBack(Timestamp)
    }
}
