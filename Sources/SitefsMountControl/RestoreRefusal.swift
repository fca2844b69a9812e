import Foundation

/// Why the daemon refused `setxattr(FILE, "user.sitefs.control.restore", ID)`, by its
/// errno. The kernel checked write permission first; the rest is the daemon's answer.
public enum RestoreRefusal {
    public static func reason(errno code: Int32) -> String {
        switch code {
        case ENOENT: return "the server has no such version of it (any more)"
        case EBUSY: return "it is locked for editing by someone else; try again once they close it"
        case EROFS, EACCES, EPERM: return "you may not change it (read-only, or not yours to write)"
        case EHOSTDOWN, EIO: return "the server cannot be reached now; try again later"
        case ENOTSUP: return "this server keeps no versions"
        case ENOTCONN: return "the sitefs daemon of its mount is gone; run `sitefs unmount` on it"
        case ENODATA: return "it is not in a sitefs mount (or its daemon predates restore: unmount and mount again)"
        default: return String(cString: strerror(code))
        }
    }
}
