import Foundation
import Synchronization

/// Failed sign-ins, counted per user name and per client address, so that guessing
/// passwords is slow: the deliberate cost of hashing alone still lets a client try several
/// passwords a second.
///
/// The first `freeFailures` failures cost nothing; after that each attempt for the same user
/// (or from the same address) must wait twice as long as the one before, up to
/// `longestWait`, and is answered 429 with `Retry-After` until then, before any password is
/// hashed. The wait never exceeds `longestWait`, so nobody can lock a real user out for
/// longer than that at a time, and records are forgotten `forgetAfter` after the last
/// failure, or as soon as that user (or address) signs in.
///
/// Memory is bounded: past `maximumRecords` per kind, the stalest records go first.
public final class SignInThrottle: Sendable {
    public struct Policy: Sendable {
        public var freeFailures = 5
        public var longestWait: Duration = .seconds(30)
        public var forgetAfter: Duration = .seconds(15 * 60)
        public var maximumRecords = 10_000

        public init() {}
    }

    private struct Record {
        var failures: Int
        var last: ContinuousClock.Instant
    }

    private struct State {
        var byUser: [String: Record] = [:]
        var byAddress: [String: Record] = [:]
    }

    private let policy: Policy
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    /// `now` is the clock (tests move it by hand).
    public init(policy: Policy = Policy(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.policy = policy
        self.now = now
    }

    /// How long the caller must wait before this attempt may be checked, or nil if it may be
    /// checked now.
    public func wait(user: String, address: String?) -> Duration? {
        let now = self.now()
        return state.withLock { state in
            let waits = [state.byUser[user], address.flatMap { state.byAddress[$0] }].compactMap { $0 }.map { record in
                record.last + delay(after: record.failures) - now
            }
            guard let longest = waits.max(), longest > .zero else { return nil }
            return longest
        }
    }

    public func failed(user: String, address: String?) {
        let now = self.now()
        state.withLock { state in
            Self.count(&state.byUser, user, at: now, policy: policy)
            if let address { Self.count(&state.byAddress, address, at: now, policy: policy) }
        }
    }

    public func succeeded(user: String, address: String?) {
        state.withLock { state in
            state.byUser[user] = nil
            if let address { state.byAddress[address] = nil }
        }
    }

    /// Records kept, of both kinds (memory accounting, tests).
    public var recordCount: Int { state.withLock { $0.byUser.count + $0.byAddress.count } }

    /// The wait after `failures` failures in a row.
    private func delay(after failures: Int) -> Duration {
        guard failures >= policy.freeFailures else { return .zero }
        let doublings = min(failures - policy.freeFailures, 20)
        return min(.seconds(1 << doublings), policy.longestWait)
    }

    private static func count(_ records: inout [String: Record], _ key: String, at now: ContinuousClock.Instant, policy: Policy) {
        var record = records[key] ?? Record(failures: 0, last: now)
        if record.last + policy.forgetAfter < now { record.failures = 0 }
        record.failures += 1
        record.last = now
        records[key] = record
        guard records.count > policy.maximumRecords else { return }
        // Forgotten ones first, then the stalest.
        records = records.filter { $0.value.last + policy.forgetAfter >= now }
        while records.count > policy.maximumRecords, let stalest = records.min(by: { $0.value.last < $1.value.last })?.key {
            records[stalest] = nil
        }
    }
}
