import Foundation

/// glibc's setxattr(2) wrapper, looked up the same way.
private let setExtendedAttribute: @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32 = {
    guard let symbol = dlsym(nil, "setxattr") else { fatalError("setxattr is missing from the C library") }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32).self)
}()

/// glibc's getxattr(2) wrapper; Swift's Glibc module does not export <sys/xattr.h>.
private let getExtendedAttribute: @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int = {
    guard let symbol = dlsym(nil, "getxattr") else {  // nil is RTLD_DEFAULT on glibc
        fatalError("getxattr is missing from the C library")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int).self)
}()

/// Reads a live mount's state from the `user.sitefs.status` attribute of its root, which
/// the daemon answers itself: no other channel to the daemon is needed.
enum MountStatusReader {
    struct Status: Decodable {
        struct Uploads: Decodable {
            struct Failure: Decodable {
                var name: String
                var reason: String
            }
            struct Conflict: Decodable {
                var name: String
                var savedAs: String
            }
            struct Progress: Decodable {
                var name: String
                var sent: Int64
                var total: Int64
            }
            var pending: Int
            var uploading: [String]
            /// Absent from daemons older than the client.
            var progress: [Progress]?
            var failed: [Failure]
            var conflicts: [Conflict]
            var signInRequired: Bool

            enum CodingKeys: String, CodingKey {
                case pending, uploading, progress, failed, conflicts
                case signInRequired = "sign_in_required"
            }
        }
        var openFiles: [String]
        var localCopies: Int
        var uploads: Uploads
        var knownItems: Int

        enum CodingKeys: String, CodingKey {
            case uploads
            case openFiles = "open_files"
            case localCopies = "local_copies"
            case knownItems = "known_items"
        }
    }

    enum Failure: Error, CustomStringConvertible {
        case notMounted(String)
        case daemonGone(String)
        case unreadable(String)

        var description: String {
            switch self {
            case .notMounted(let path): return "\(path) is not a sitefs mount"
            case .daemonGone(let path): return "the sitefs daemon of \(path) is gone; run `sitefs unmount \(path)`"
            case .unreadable(let detail): return "cannot read the mount's status: \(detail)"
            }
        }
    }

    /// Asks the daemon to queue failed uploads again.
    static func requestRetry(_ mountpoint: String) throws(Failure) { try request("user.sitefs.retry", of: mountpoint) }

    /// Asks the daemon to send now what waits out the settle delay.
    static func requestSync(_ mountpoint: String) throws(Failure) { try request("user.sitefs.sync", of: mountpoint) }

    private static func request(_ attribute: String, of mountpoint: String) throws(Failure) {
        guard setExtendedAttribute(mountpoint, attribute, nil, 0, 0) == 0 else {
            switch errno {
            case ENOTCONN: throw .daemonGone(mountpoint)
            case ENOTSUP: throw .notMounted(mountpoint)
            default: throw .unreadable(String(cString: strerror(errno)))
            }
        }
    }

    static func read(_ mountpoint: String) throws(Failure) -> Status {
        try read("user.sitefs.status", of: mountpoint)
    }

    /// The status once the daemon has no upload or rename left, or after a fraction of a
    /// second (`sitefs sync` waits with it instead of polling). Nil from a daemon older than
    /// this attribute.
    static func readSettled(_ mountpoint: String) throws(Failure) -> Status? {
        do {
            return try read("user.sitefs.status.settled", of: mountpoint)
        } catch .notMounted(_) {
            _ = try read(mountpoint)  // still a mount: only the attribute is unknown
            return nil
        }
    }

    private static func read(_ attribute: String, of mountpoint: String) throws(Failure) -> Status {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = getExtendedAttribute(mountpoint, attribute, &buffer, buffer.count)
        guard count >= 0 else {
            switch errno {
            case ENOTCONN: throw .daemonGone(mountpoint)
            case ENODATA, ENOTSUP: throw .notMounted(mountpoint)
            default: throw .unreadable(String(cString: strerror(errno)))
            }
        }
        do {
            return try JSONDecoder().decode(Status.self, from: Data(buffer[0..<count]))
        } catch {
            throw .unreadable("\(error)")
        }
    }
}
