import Foundation
import Synchronization

/// Runs thumbnail work (libvips, zip reading: blocking CPU and disk) on threads of its own,
/// at most `slots` at a time in the whole process, never on the threads that serve requests
/// (as `HashingGate` does for password hashing).
///
/// Callers beyond `slots` wait their turn without holding a thread, up to `patience`; one
/// still waiting then, or arriving when more than its `maximumWaiting` already wait, is
/// refused with `503 busy` and `Retry-After`. So a burst of requests for thumbnails costs at
/// most `slots` threads, a bounded queue and a bounded wait, never the server's other work.
final class ThumbnailGate: Sendable {
    /// The process's gate: every router (there is one per server process) shares it.
    static let shared = ThumbnailGate(slots: 2, maximumWaiting: 32, patience: .seconds(20))

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running = 0
        var waiting: [Waiter] = []
        var nextID: UInt64 = 0
    }

    let slots: Int
    let maximumWaiting: Int
    let patience: Duration
    /// What a refused caller is told to wait, in seconds.
    let retryAfterSeconds = 5
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "sitefs.thumbnails", attributes: .concurrent)

    init(slots: Int, maximumWaiting: Int, patience: Duration) {
        self.slots = max(1, slots)
        self.maximumWaiting = max(0, maximumWaiting)
        self.patience = patience
    }

    /// `work`'s result, computed off the request threads once a slot is free. `maximumWaiting`
    /// lowers the queue this caller accepts to wait behind (background work waits behind few).
    func run<T: Sendable>(maximumWaiting: Int? = nil, _ work: @escaping @Sendable () -> T) async throws -> T {
        try await acquire(maximumWaiting: min(maximumWaiting ?? self.maximumWaiting, self.maximumWaiting))
        defer { release() }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// How many run and wait now (tests).
    var load: (running: Int, waiting: Int) { state.withLock { ($0.running, $0.waiting.count) } }

    private enum Admission { case now, wait(UInt64), refuse }

    private func acquire(maximumWaiting: Int) async throws {
        let admission = state.withLock { state -> Admission in
            if state.running < slots {
                state.running += 1
                return .now
            }
            guard state.waiting.count < maximumWaiting else { return .refuse }
            state.nextID += 1
            return .wait(state.nextID)
        }
        guard case .wait(let id) = admission else {
            if case .refuse = admission { throw APIError.busy(retryAfterSeconds: retryAfterSeconds) }
            return
        }
        // The waiter leaves the queue after `patience` (or when its request is cancelled)
        // unless a slot was handed to it first; whichever comes first resumes it, once.
        let timer = Task { [patience] in
            try? await Task.sleep(for: patience)
            self.giveUp(id)
        }
        defer { timer.cancel() }
        let admitted = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    // A slot may have come free between the two locks.
                    if state.running < slots {
                        state.running += 1
                        return true
                    }
                    state.waiting.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if now { continuation.resume(returning: true) }
            }
        } onCancel: {
            giveUp(id)
        }
        guard admitted else { throw APIError.busy(retryAfterSeconds: retryAfterSeconds) }
    }

    /// Takes waiter `id` out of the queue and tells it no, if it is still waiting.
    private func giveUp(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiting.remove(at: index)
        }
        waiter?.continuation.resume(returning: false)
    }

    /// Hands the slot to the next waiter (which then counts as running), or frees it.
    private func release() {
        let next = state.withLock { state -> Waiter? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }
}
