import CFuse
import SitefsCore
import Synchronization

/// `init` and `destroy`: the session's first and last callbacks.
enum ConnectionHandlers {
    /// Negotiates capabilities, then tells the core it is mounted.
    ///
    /// - READDIRPLUS on (unless `MountOptions.readDirectoryPlus` is off) and
    ///   READDIRPLUS_AUTO off: every directory read is a readdirplus, so `ls -l` gets names
    ///   and attributes in one pass instead of a lookup per entry.
    /// - PARALLEL_DIROPS on: lookups and readdirs in one directory may run concurrently
    ///   (the core takes concurrent calls anyway). libfuse before 3.16 never passes this
    ///   flag to the kernel (libfuse PR #861), so on 3.14 the kernel still serializes them;
    ///   3.16+ defaults it off, hence asking explicitly.
    /// - WRITEBACK_CACHE off: writes reach the core as the application makes them (the
    ///   core uploads; it must see each one and its errors).
    /// - ATOMIC_O_TRUNC on: open(O_TRUNC) arrives as one `open` with O_TRUNC in `flags`
    ///   (the core truncates) instead of a setattr(size 0) followed by open.
    /// - POSIX_LOCKS / FLOCK_LOCKS off: the kernel keeps fcntl and flock locks locally.
    /// - HANDLE_KILLPRIV off: the kernel clears set-id bits itself on write/chown.
    /// Only bits the kernel offers are requested (libfuse aborts the session otherwise).
    /// Also records whether the kernel's direct writes keep the page cache coherent
    /// (`SessionState.directWritesAreCoherent`).
    static func initialize(_ userdata: UnsafeMutableRawPointer?, _ connection: UnsafeMutablePointer<fuse_conn_info>?) {
        let session = SessionState.of(userdata: userdata)
        if let connection {
            let capable = connection.pointee.capable
            var want = connection.pointee.want
            if session.readDirectoryPlus {
                want |= UInt32(FUSE_CAP_READDIRPLUS) & capable
            } else {
                want &= ~UInt32(FUSE_CAP_READDIRPLUS)
            }
            want |= UInt32(FUSE_CAP_ATOMIC_O_TRUNC) & capable
            want |= UInt32(FUSE_CAP_PARALLEL_DIROPS) & capable
            want &= ~UInt32(FUSE_CAP_READDIRPLUS_AUTO)
            want &= ~UInt32(FUSE_CAP_WRITEBACK_CACHE)
            want &= ~UInt32(FUSE_CAP_POSIX_LOCKS)
            want &= ~UInt32(FUSE_CAP_FLOCK_LOCKS)
            want &= ~UInt32(FUSE_CAP_HANDLE_KILLPRIV)
            connection.pointee.want = want
            let version = (connection.pointee.proto_major, connection.pointee.proto_minor)
            session.directWritesAreCoherent.store(version >= (7, 39), ordering: .relaxed)
        }
        session.isInitialized.store(true, ordering: .sequentiallyConsistent)
        session.operations.mounted(invalidator: session.invalidator)
    }

    /// Called once by `fuse_session_destroy` when `init` had run (or on FUSE_DESTROY).
    static func destroy(_ userdata: UnsafeMutableRawPointer?) {
        let session = SessionState.of(userdata: userdata)
        if session.isInitialized.exchange(false, ordering: .sequentiallyConsistent) {
            session.operations.unmounting()
        }
    }
}
