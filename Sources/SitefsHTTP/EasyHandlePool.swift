import Foundation

/// Idle easy handles waiting for the next request.
///
/// Each worker thread checks a handle out for one request and returns it afterwards, so a
/// handle is never shared while in use. Returned handles keep their live connections, which
/// is what makes keep-alive work across requests. At most `capacity` idle handles are kept;
/// a burst beyond that creates handles on demand and discards the extras on return.
final class EasyHandlePool: @unchecked Sendable {
    // @unchecked: `idle` is only touched under `lock`, and a handle leaves the array before
    // any other thread can use it.
    private let lock = NSLock()
    private var idle: [EasyHandle] = []
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 0)
    }

    func checkOut() throws(HTTPClientError) -> EasyHandle {
        if let handle = lock.withLock({ idle.popLast() }) { return handle }
        return try EasyHandle()
    }

    /// Takes a handle back after its transfer has finished on the calling thread.
    func checkIn(_ handle: EasyHandle) {
        // Transfer already reset it; resetting again is cheap and keeps the pool's promise
        // (no stale options or pointers in an idle handle) independent of the caller.
        handle.reset()
        let kept = lock.withLock { () -> Bool in
            guard idle.count < capacity else { return false }
            idle.append(handle)
            return true
        }
        // An extra handle is dropped here, outside the lock: its deinit closes connections.
        _ = kept
    }

    /// For tests: how many handles are waiting.
    var idleCount: Int {
        lock.withLock { idle.count }
    }
}
