import CLinux
import Foundation
import SitefsCore

/// Reads a live mount's state from the `user.sitefs.status` attribute of its root, and sends
/// it requests through the control attributes there, which the daemon answers itself: no
/// other channel to the daemon is needed, and the kernel already limits it to the users who
/// may see the mount (the daemon then answers only the owner and root).
enum MountStatusReader {
    /// The daemon's own type (`SitefsFilesystem.MountStatus`): one declaration of the shape.
    typealias Status = SitefsFilesystem.MountStatus

    enum Failure: Error, CustomStringConvertible {
        case notMounted(String)
        case daemonGone(String)
        /// What the command tried (`read the status of PATH`), and why it failed.
        case failed(String, String)

        var description: String {
            switch self {
            case .notMounted(let path): return "\(path) is not a sitefs mount"
            case .daemonGone(let path): return "the sitefs daemon of \(path) is gone; run `sitefs unmount \(path)`"
            case .failed(let action, let detail): return "cannot \(action): \(detail)"
            }
        }
    }

    /// Asks the daemon to queue failed uploads again.
    static func requestRetry(_ mountpoint: String) throws(Failure) {
        try request(control: "user.sitefs.control.retry", orSetting: "user.sitefs.retry", of: mountpoint,
                    action: "ask the sitefs daemon of \(mountpoint) to retry failed uploads")
    }

    /// Asks the daemon to send now what waits out the settle delay.
    static func requestSync(_ mountpoint: String) throws(Failure) {
        try request(control: "user.sitefs.control.sync", orSetting: "user.sitefs.sync", of: mountpoint,
                    action: "ask the sitefs daemon of \(mountpoint) to send pending saves")
    }

    /// A control is an attribute the daemon acts on when it is read, which the mount's owner
    /// may do whatever the root's mode (see `SitefsFilesystem.syncControl`). A daemon from
    /// before the read-controls knows only the set-attribute form (root only).
    private static func request(control: String, orSetting legacy: String, of mountpoint: String, action: String) throws(Failure) {
        do {
            _ = try read(control, of: mountpoint, action: action)
        } catch .notMounted(_) {
            _ = try read(mountpoint)  // still a mount: a daemon older than the read-controls
            guard setxattr(mountpoint, legacy, nil, 0, 0) == 0 else {
                if errno == EACCES || errno == EPERM {
                    throw .failed(action, "permission denied: the daemon predates this sitefs and takes requests from root "
                                  + "only; unmount and mount again to update it")
                }
                throw failure(errno, mountpoint, action: action)
            }
        }
    }

    static func read(_ mountpoint: String) throws(Failure) -> Status {
        try read("user.sitefs.status", of: mountpoint, action: "read the status of \(mountpoint)")
    }

    /// The status once the daemon has no upload or rename left, or after a fraction of a
    /// second (`sitefs sync` waits with it instead of polling). Nil from a daemon older than
    /// this attribute.
    static func readSettled(_ mountpoint: String) throws(Failure) -> Status? {
        do {
            return try read("user.sitefs.status.settled", of: mountpoint, action: "read the status of \(mountpoint)")
        } catch .notMounted(_) {
            _ = try read(mountpoint)  // still a mount: only the attribute is unknown
            return nil
        }
    }

    /// Tells the daemon not to wait for uploads once unmounted, and returns what it holds.
    static func leaveQueued(_ mountpoint: String) throws(Failure) -> Status {
        try read("user.sitefs.control.leave-queued", of: mountpoint, action: "tell the sitefs daemon of \(mountpoint) to stop sending")
    }

    /// The status once the daemon's pin keeper has nothing left to do for now, or after a
    /// fraction of a second (`sitefs sync --pinned` waits with it).
    static func readPinsSettled(_ mountpoint: String) throws(Failure) -> Status {
        try read("user.sitefs.status.pinned", of: mountpoint, action: "read the pins of \(mountpoint)")
    }

    private static func failure(_ code: Int32, _ mountpoint: String, action: String) -> Failure {
        switch code {
        case ENOTCONN: return .daemonGone(mountpoint)
        case ENODATA, ENOTSUP: return .notMounted(mountpoint)
        case EACCES, EPERM:
            return .failed(action, "permission denied (only the user who mounted it, or root, may)")
        default: return .failed(action, String(cString: strerror(code)))
        }
    }

    private static func read(_ attribute: String, of mountpoint: String, action: String) throws(Failure) -> Status {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = getxattr(mountpoint, attribute, &buffer, buffer.count)
        guard count >= 0 else { throw failure(errno, mountpoint, action: action) }
        do {
            return try JSONDecoder().decode(Status.self, from: Data(buffer[0..<count]))
        } catch {
            throw .failed(action, "the daemon's answer is not a status: \(error)")
        }
    }
}
