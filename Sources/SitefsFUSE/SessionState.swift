import CFuse
import SitefsCore
import Synchronization

/// What every callback needs, reached through the session's userdata pointer.
///
/// Lifetime: `FUSEMount` creates this object, passes it to `fuse_session_new` as an
/// *unretained* pointer and keeps its own strong reference until after
/// `fuse_session_destroy` has returned, so the pointer is valid for every callback libfuse
/// can make. The callbacks themselves capture nothing (they are C function pointers).
final class SessionState: Sendable {
    let operations: any FilesystemOperations
    let invalidator: SessionInvalidator
    /// Between the `init` callback and `destroy`: whether the core has been told it is
    /// mounted and still has to be told it is unmounting.
    let isInitialized = Atomic<Bool>(false)

    /// Set by `init`: the kernel (FUSE 7.39, Linux 6.6, and later) drops other handles'
    /// cached pages of a range before it sends a direct write to that range, so a handle
    /// that only writes may bypass the page cache without leaving readers stale pages
    /// (`OpenReply.writesBypassCache`). Older kernels keep such writes in the page cache.
    let directWritesAreCoherent = Atomic<Bool>(false)

    /// `MountOptions.readDirectoryPlus`, read by the `init` callback.
    let readDirectoryPlus: Bool

    init(operations: any FilesystemOperations, readDirectoryPlus: Bool) {
        self.operations = operations
        self.readDirectoryPlus = readDirectoryPlus
        self.invalidator = SessionInvalidator()
    }

    var userdata: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque()
    }

    static func of(userdata: UnsafeMutableRawPointer?) -> SessionState {
        guard let userdata else { preconditionFailure("FUSE session without sitefs userdata") }
        return Unmanaged<SessionState>.fromOpaque(userdata).takeUnretainedValue()
    }

    static func of(_ request: fuse_req_t) -> SessionState {
        of(userdata: fuse_req_userdata(request))
    }
}
