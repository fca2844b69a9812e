import SystemPackage

/// Why `FUSEMount.run()` could not mount or serve the filesystem.
public enum FUSEMountError: Error, Equatable, CustomStringConvertible {
    case mountpointMissing(String)
    case mountpointNotDirectory(String)
    /// The path is unreachable (permission, I/O error, ...).
    case mountpointInaccessible(String, Errno)
    /// A FUSE filesystem whose daemon is gone is still mounted there.
    case mountpointDisconnected(String)
    /// Something is already mounted on the path.
    case alreadyMounted(String)
    /// `run()` was called while this mount was running or after it finished.
    case alreadyStarted
    /// libfuse rejected the options (details went to stderr).
    case sessionCreationFailed
    /// The mount(2) / fusermount3 step failed; `errno` is what the failing call left, if any.
    case mountFailed(String, Errno?)
    /// The request loop ended with an error instead of an unmount.
    case sessionFailed(Errno)

    public var description: String {
        switch self {
        case .mountpointMissing(let path):
            "mountpoint \(path) does not exist"
        case .mountpointNotDirectory(let path):
            "mountpoint \(path) is not a directory"
        case .mountpointInaccessible(let path, let errno):
            "mountpoint \(path) cannot be used: \(errno)"
        case .mountpointDisconnected(let path):
            "mountpoint \(path) is a disconnected FUSE mount (its daemon is gone); unmount it first: fusermount3 -u \(path)"
        case .alreadyMounted(let path):
            "something is already mounted on \(path); unmount it first or choose another mountpoint"
        case .alreadyStarted:
            "this mount has already been started"
        case .sessionCreationFailed:
            "libfuse rejected the mount options (see the messages above)"
        case .mountFailed(let path, let errno):
            "mounting on \(path) failed" + (errno.map { ": \($0)" } ?? "")
        case .sessionFailed(let errno):
            "the FUSE session ended with an error: \(errno)"
        }
    }
}
