import Glibc
import SystemPackage

/// Checks a mountpoint before libfuse sees it, so the common mistakes come back as clear
/// `FUSEMountError`s instead of a libfuse line on stderr and a bare failure.
enum MountpointValidation {
    /// The canonical absolute path to mount on: an existing directory, reachable, with
    /// nothing mounted on it yet.
    static func canonicalPath(_ path: String) throws(FUSEMountError) -> String {
        var status = Glibc.stat()
        guard stat(path, &status) == 0 else {
            throw failure(path, errno)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw .mountpointNotDirectory(path)
        }
        guard let resolved = realpath(path, nil) else {
            throw failure(path, errno)
        }
        let canonical = String(cString: resolved)
        free(resolved)
        if MountTable.isMountPoint(canonical) {
            throw .alreadyMounted(canonical)
        }
        return canonical
    }

    private static func failure(_ path: String, _ code: Int32) -> FUSEMountError {
        switch code {
        case ENOENT: .mountpointMissing(path)
        case ENOTDIR: .mountpointNotDirectory(path)
        case ENOTCONN: .mountpointDisconnected(path)
        default: .mountpointInaccessible(path, Errno(rawValue: code))
        }
    }
}
