import CFuse
import Glibc

/// Sends the session one request so a worker of `fuse_session_loop_mt` wakes up, sees the
/// exit flag set by `fuse_session_exit`, and ends the loop.
///
/// The request is a statfs(2) of the mountpoint: the kernel never answers statfs from a
/// cache and checks no permissions for it, so it always reaches the daemon while the mount
/// is attached. (FUSE_NOTIFY_RETRIEVE, which would need no syscall into the mount, is
/// refused by current kernels for directory inodes, and the root is the only inode the
/// kernel is sure to hold.)
///
/// The call runs on its own detached thread because it may not return until the session
/// is torn down: a worker that has seen the exit flag drops the request unanswered, and the
/// caller then gets ENOTCONN once `run()` closes the connection. The thread owns a private
/// copy of the path and touches nothing else, so it may outlive the mount object.
enum LoopDoorbell {
    static func ring(mountpoint: String) {
        guard let path = strdup(mountpoint) else { return }
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { argument in
            guard let path = argument?.assumingMemoryBound(to: CChar.self) else { return nil }
            var buffer = sitefs_statvfs_zero()
            _ = statvfs(path, &buffer)
            free(path)
            return nil
        }, path)
        if started == 0 {
            pthread_detach(thread)
        } else {
            free(path)
        }
    }
}
