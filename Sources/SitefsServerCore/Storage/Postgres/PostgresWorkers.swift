import Foundation
import Logging
import Synchronization

/// A fixed number of threads, each with one `PostgresSession`, that run the store's
/// blocking transactions off Swift's cooperative threads (a blocked cooperative thread
/// would stall unrelated requests; there are only as many as cores).
///
/// Jobs wait in one first-in, first-out queue. One that has waited `queueTimeout` without
/// a free worker is failed with 503 rather than kept: the database is too slow or gone, and
/// the client retries.
final class PostgresWorkers: @unchecked Sendable {
    private struct Job {
        let queued: ContinuousClock.Instant
        let run: (PostgresSession?) -> Void
    }

    private struct Queue {
        var jobs: [Job] = []
        var head = 0
        var closed = false
    }

    /// Lock order: a leaf. Workers wait on it for jobs; it is never held while a job runs.
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queue = Queue()
    private let queueTimeout: Duration
    private var threads: [Thread] = []

    init(count: Int, queueTimeout: Duration, makeSession: (Int) -> PostgresSession) {
        self.queueTimeout = queueTimeout
        for index in 0..<count {
            let session = makeSession(index)
            // The threads keep the workers alive until `close()` lets them end.
            let thread = Thread { self.work(with: session) }
            thread.name = "sitefs-postgres-\(index)"
            thread.stackSize = 1 << 20
            threads.append(thread)
        }
        for thread in threads { thread.start() }
    }

    /// Runs `body` on a worker; the caller's task waits without holding a thread.
    func run<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue { session in
                guard let session else { return continuation.resume(throwing: APIError.storeUnavailable) }
                continuation.resume(with: Result { try body(session) })
            }
        }
    }

    /// Runs `body` on a worker and blocks the calling thread until it is done (startup only).
    func runBlocking<T: Sendable>(_ body: @escaping @Sendable (PostgresSession) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        enqueue { session in
            result.withLock { $0 = session.map { session in Result { try body(session) } } ?? .failure(APIError.storeUnavailable) }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Stops the workers once they have run what is queued; jobs given later fail (503).
    func close() {
        condition.lock()
        queue.closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func enqueue(_ run: @escaping (PostgresSession?) -> Void) {
        condition.lock()
        let closed = queue.closed
        if !closed {
            queue.jobs.append(Job(queued: .now, run: run))
            condition.signal()
        }
        condition.unlock()
        if closed { run(nil) }
    }

    private func work(with session: PostgresSession) {
        while let job = next() {
            // A job that waited too long is refused (nil session) rather than run late.
            job.run(ContinuousClock.now - job.queued > queueTimeout ? nil : session)
        }
        session.drop()
    }

    /// The next job, or nil once closed.
    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while queue.head == queue.jobs.count && !queue.closed { condition.wait() }
        guard queue.head < queue.jobs.count else { return nil }
        let job = queue.jobs[queue.head]
        queue.head += 1
        if queue.head > 64 && queue.head * 2 > queue.jobs.count {
            queue.jobs.removeFirst(queue.head)
            queue.head = 0
        }
        return job
    }
}
