import Synchronization

/// Counts committed writes that extended the change feed and wakes those waiting on the
/// sites they touched: what a change-feed long-poll (`GET /v1/changes?wait=S`) sleeps on
/// between looks at the feed.
///
/// A waiter names the sites it can see, and only a commit in one of them (or one whose sites
/// are not known) wakes it: with many mounts waiting, a save wakes the few who see its site,
/// not all of them, each of whom would look at the feed again for nothing.
///
/// With SQLite, in-process only: a write by another process on the same database (an admin
/// command) wakes nobody, and a waiter sees it when its wait ends. With PostgreSQL, other
/// instances' commits arrive through `PostgresCommitListener`.
final class CommitSignal: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<Void, Never>
        /// nil: any site.
        let sites: Set<Int64>?
    }

    private struct State {
        var count: UInt64 = 0
        var nextWaiter = 0
        var waiters: [Int: Waiter] = [:]
        var wakeups = 0
    }

    /// Lock order: a leaf; continuations are resumed after it is released.
    private let state = Mutex(State())

    /// Commits so far.
    var count: UInt64 { state.withLock { $0.count } }

    /// How many wait now (for tests: a long-poll has begun its wait).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waiters woken by a commit so far (for tests: who was woken, and who was left alone).
    var wakeups: Int { state.withLock { $0.wakeups } }

    /// A write committed that extended the feeds of `sites` (nil: maybe any): the waiters on
    /// them wake.
    func committed(sites: Set<Int64>?) {
        let woken = state.withLock { state -> [Waiter] in
            state.count &+= 1
            let due = state.waiters.filter { _, waiter in
                guard let sites, let watched = waiter.sites else { return true }
                return !watched.isDisjoint(with: sites)
            }
            for id in due.keys { state.waiters.removeValue(forKey: id) }
            state.wakeups += due.count
            return Array(due.values)
        }
        for waiter in woken { waiter.continuation.resume() }
    }

    /// Returns once a commit after `seen` touched one of `sites` (nil: any), at `deadline`,
    /// or when the task is cancelled (the client went away), whichever comes first. A commit
    /// between `seen` and the wait's start, whatever its sites, returns at once: the caller
    /// looks again, which is cheaper than working out whether it had to.
    func wait(after seen: UInt64, on sites: Set<Int64>?, until deadline: ContinuousClock.Instant) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            self.wake(id)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let registered = state.withLock { state -> Bool in
                    guard state.count == seen, ContinuousClock.now < deadline, !Task.isCancelled else { return false }
                    state.waiters[id] = Waiter(continuation: continuation, sites: sites)
                    return true
                }
                if !registered { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
    }

    /// Resumes waiter `id` if it still waits (the timer, or a cancellation).
    private func wake(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
    }
}
