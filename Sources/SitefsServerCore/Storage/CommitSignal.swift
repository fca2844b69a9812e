import Synchronization

/// Counts this process's committed writes and wakes whoever waits for the next one: what a
/// change-feed long-poll (`GET /v1/changes?wait=S`) sleeps on between looks at the feed.
///
/// In-process only: a write by another process on the same database (an admin command)
/// wakes nobody, and a waiter sees it when its wait ends.
final class CommitSignal: Sendable {
    private struct State {
        var count: UInt64 = 0
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    /// Lock order: a leaf; continuations are resumed after it is released.
    private let state = Mutex(State())

    /// Commits so far.
    var count: UInt64 { state.withLock { $0.count } }

    /// How many wait now (for tests: a long-poll has begun its wait).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// A write committed: every waiter wakes.
    func committed() {
        let woken = state.withLock { state in
            state.count &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the count has moved past `seen`, at `deadline`, or when the task is
    /// cancelled (the client went away), whichever comes first.
    func wait(after seen: UInt64, until deadline: ContinuousClock.Instant) async {
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
                    state.waiters[id] = continuation
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
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
