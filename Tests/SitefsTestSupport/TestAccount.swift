import Foundation

/// A local account without privileges, for running what a user runs as that user: people
/// mount sitefs as themselves, and root bypasses the permission checks (the kernel's on
/// `setxattr`, fusermount3's on mount points and `allow_other`) that they meet.
///
/// The test process must be root to create one (CI is); the account is a system account
/// with no home and no login shell, made once with `useradd` and reused by later runs.
public struct TestAccount: Sendable {
    public let name: String
    public let uid: UInt32
    public let gid: UInt32

    /// True when accounts can be made and switched to here (the tests run as root).
    public static var canSwitchUsers: Bool { getuid() == 0 }

    /// The account `name`, created if it does not exist yet.
    public static func named(_ name: String) throws -> TestAccount {
        if let account = lookUp(name) { return account }
        let made = try SitefsTestSupport.run(URL(fileURLWithPath: "/usr/sbin/useradd"),
                                             ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
        // Another test process may have made it meanwhile (exit 9: the name is taken).
        guard made.status == 0 || made.status == 9, let account = lookUp(name) else {
            throw ProcessFailure("useradd \(name) failed (\(made.status)): \(made.err)")
        }
        return account
    }

    private static func lookUp(_ name: String) -> TestAccount? {
        guard let entry = getpwnam(name) else { return nil }
        return TestAccount(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// Gives /dev/fuse the mode Debian's udev rule gives it (0666), so users mount through
    /// the setuid fusermount3. Some machines (this project's CI among them) create it 0600.
    public static func openFUSEToUsers() throws {
        var info = stat()
        guard stat("/dev/fuse", &info) == 0 else { throw ProcessFailure("/dev/fuse is missing") }
        if info.st_mode & 0o666 != 0o666, chmod("/dev/fuse", 0o666) != 0 {
            throw ProcessFailure("cannot make /dev/fuse usable by users: \(String(cString: strerror(errno)))")
        }
    }

    /// Hands a file or folder to this account (and nobody else: `mode`).
    public func own(_ path: String, mode: mode_t = 0o700) throws {
        guard chown(path, uid, gid) == 0, chmod(path, mode) == 0 else {
            throw ProcessFailure("cannot give \(path) to \(name): \(String(cString: strerror(errno)))")
        }
    }

    /// Runs `executable` as this account, with exactly `environment` (nothing of the test
    /// process's leaks in) and no capabilities. Setuid helpers such as fusermount3 still work.
    @discardableResult
    public func run(_ executable: URL, _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60,
                    environment: [String: String]) throws -> (status: Int32, out: String, err: String) {
        let switchUser = ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"]
        let clearEnvironment = ["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try SitefsTestSupport.run(URL(fileURLWithPath: "/usr/bin/setpriv"),
                                         switchUser + ["/usr/bin/env"] + clearEnvironment + [executable.path] + arguments,
                                         stdin: stdin, timeout: timeout)
    }

    /// The environment of a user whose home is `home`: XDG folders under it.
    public static func environment(home: URL) -> [String: String] {
        ["HOME": home.path,
         "XDG_CONFIG_HOME": home.appendingPathComponent(".config").path,
         "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path,
         "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
         "LANG": "C.UTF-8"]
    }
}
