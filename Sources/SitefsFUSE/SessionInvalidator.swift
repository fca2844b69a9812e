import CFuse
import Glibc
import SitefsCore
import Synchronization

/// `KernelCacheInvalidator` over `fuse_lowlevel_notify_inval_entry` / `_inval_inode`.
///
/// The notify calls write to the session's device fd and may block in the kernel (it takes
/// the directory's inode lock), so they run *outside* the mutex. The mutex only guards the
/// session pointer and an in-flight count, which is what lets teardown stop new calls and
/// wait for running ones before `fuse_session_destroy` frees the session: after `stop()`
/// every call is a no-op, and `waitUntilIdle` returns once none is inside libfuse.
///
/// Results are ignored: ENOENT just means the kernel had nothing cached for that inode or
/// name, and any other failure (connection gone) leaves nothing to invalidate either.
final class SessionInvalidator: KernelCacheInvalidator {
    private struct State: ~Copyable {
        var session: SessionPointer?
        var stopped = false
        var inFlight = 0
    }

    private let state = Mutex(State())

    /// Called once the session exists, before it is mounted. Ignored after `stop()`.
    func attach(_ session: SessionPointer) {
        state.withLock { state in
            if !state.stopped { state.session = session }
        }
    }

    /// No new notifications after this, for good; running ones finish (see `waitUntilIdle`).
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.session = nil
        }
    }

    /// Waits (polling; teardown only) until no notification is inside libfuse.
    /// Returns false if some are still running when `timeout` has passed.
    func waitUntilIdle(timeout: Duration) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while state.withLock({ $0.inFlight }) > 0 {
            if clock.now >= deadline { return false }
            usleep(1_000)
        }
        return true
    }

    func invalidateEntry(parent: InodeNumber, name: FileName) {
        withSession { session in
            name.bytes.withUnsafeBufferPointer { bytes in
                bytes.withMemoryRebound(to: CChar.self) { name in
                    _ = fuse_lowlevel_notify_inval_entry(session.pointer, parent, name.baseAddress, name.count)
                }
            }
        }
    }

    func invalidateInode(_ inode: InodeNumber, offset: Int64, length: Int64) {
        withSession { session in
            _ = fuse_lowlevel_notify_inval_inode(session.pointer, inode, off_t(offset), off_t(length))
        }
    }

    private func withSession(_ body: (SessionPointer) -> Void) {
        let session: SessionPointer? = state.withLock { state in
            guard let session = state.session else { return nil }
            state.inFlight += 1
            return session
        }
        guard let session else { return }
        defer { state.withLock { $0.inFlight -= 1 } }
        body(session)
    }
}

/// A `struct fuse_session *` that may cross threads. libfuse's notify and exit functions
/// are safe to call from any thread; what keeps a use of it valid is the owner's state
/// machine (`FUSEMount`, `SessionInvalidator`), never this wrapper.
struct SessionPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}
