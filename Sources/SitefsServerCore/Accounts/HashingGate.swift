import Foundation
import Synchronization

/// Runs password hashing (PBKDF2, a deliberate tenth of a second of CPU) on threads of its
/// own, at most `slots` at a time, never on the threads that serve requests: hashed there,
/// 16 concurrent sign-ins take other users' `GET /v1/sites` from 3 ms to 4.5 s. Callers
/// beyond `slots` wait their turn without holding a thread; beyond `maximumWaiting` they are
/// told to come back (503 with `Retry-After`).
public final class HashingGate: Sendable {
    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    public let slots: Int
    public let maximumWaiting: Int
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "sitefs.password-hashing", attributes: .concurrent)

    public init(slots: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2), maximumWaiting: Int = 64) {
        self.slots = max(1, slots)
        self.maximumWaiting = max(0, maximumWaiting)
    }

    /// `work`'s result, computed off the request threads once a slot is free.
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    private enum Admission { case now, wait, refuse }

    private func acquire() async throws {
        let admission = state.withLock { state -> Admission in
            if state.running < slots {
                state.running += 1
                return .now
            }
            return state.waiting.count < maximumWaiting ? .wait : .refuse
        }
        switch admission {
        case .now: return
        case .refuse: throw APIError.busy(retryAfterSeconds: 1)
        case .wait:
            await withCheckedContinuation { continuation in
                let admitted = state.withLock { state -> Bool in
                    // A slot may have come free between the two locks.
                    if state.running < slots {
                        state.running += 1
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if admitted { continuation.resume() }
            }
        }
    }

    /// Hands the slot to the next waiter (which then counts as running), or frees it.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
