import Foundation

/// The mount table and the daemons behind its entries, for tests that mount and must leave
/// nothing mounted and nothing running however they end.
public enum MountTable {
    /// Whether `path` is a mount point in this process's namespace (the mount point field of
    /// /proc/self/mountinfo; test paths need no escapes).
    public static func isMounted(_ path: String) -> Bool {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").contains { line in
            line.split(separator: " ").dropFirst(4).first.map(String.init) == path
        }
    }

    /// The `sitefs` daemons serving `mountpoint`, found by their command lines.
    public static func daemons(serving mountpoint: String) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap(Int32.init).filter { pid in
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.contains("--daemon-child") && arguments.contains(mountpoint)
        }
    }

    /// Detaches `mountpoint` lazily (`fusermount3 -u -z`), which works whatever state its
    /// filesystem is in: a stuck or dead daemon's calls then fail instead of hanging.
    public static func forceUnmount(_ mountpoint: String) {
        _ = try? run(URL(fileURLWithPath: "/bin/fusermount3"), ["-u", "-z", mountpoint], timeout: 15)
    }

    /// What a test's teardown does when its own unmount may not have worked: a lazy unmount
    /// if `mountpoint` is still mounted, then SIGKILL to any daemon still serving it.
    public static func release(_ mountpoint: String) {
        if isMounted(mountpoint) { forceUnmount(mountpoint) }
        for pid in daemons(serving: mountpoint) { kill(pid, SIGKILL) }
    }
}

/// A real mount by the `sitefs` executable, the way a user makes one: `sitefs login`, then
/// `sitefs mount`, which starts the daemon as its own process, in a temporary folder of the
/// test's own (config and cache in it). Every suite that mounts a server uses it; what the
/// server is (sitefs-server, a WebDAV server, behind a fault proxy or not) is the caller's.
///
/// `tearDown()` (also run at deinit) always leaves nothing behind, whether or not the test
/// passed: `sitefs unmount`, a lazy unmount when that did not work, SIGKILL to any daemon
/// left, then what the caller registered with `onTearDown` (its server, its proxy), then the
/// folder (kept, and printed, with SITEFS_TEST_KEEP=1). Every wait in it has a deadline.
///
/// With `account`, everything the user runs (`sitefs`, `shell`) runs as that unprivileged
/// account, in a home of its own under the folder, with the cache where sitefs puts it by
/// default (the XDG cache folder) and the mount made through fusermount3.
public final class DaemonMount: @unchecked Sendable {
    /// The test's folder: everything of this mount and its server is in it.
    public let root: URL
    public let mountpoint: URL
    /// The mount's cache directory (with `account`: known once mounted).
    public private(set) var cache: URL
    /// The user's environment for `sitefs` and `shell`.
    public let environment: [String: String]
    /// Who runs `sitefs` and `shell`: nil for this process's own user.
    public let account: TestAccount?
    /// The user's home with `account` (their XDG config and cache folders are in it).
    public let home: URL?
    /// The URL given to `login` and `mount`.
    public private(set) var mountURL = ""
    private var cleanups: [() -> Void] = []
    private var tornDown = false

    /// Makes the folder (`sitefs-PREFIX-XXXXXXXX` in the temporary directory) and the mount
    /// point; mounts nothing yet.
    public init(prefix: String, as account: TestAccount? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-\(prefix)-\(UUID().uuidString.prefix(8))")
        self.account = account
        if let account {
            let home = root.appendingPathComponent("home")
            self.home = home
            mountpoint = home.appendingPathComponent("mnt")
            try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
            try account.own(home.path)
            try account.own(mountpoint.path, mode: 0o755)
            environment = TestAccount.environment(home: home)
            cache = home  // found once mounted (the default cache directory)
        } else {
            home = nil
            cache = root.appendingPathComponent("cache")
            mountpoint = root.appendingPathComponent("mnt")
            try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
            // XDG_DATA_HOME too: the daemon keeps files it rescues there (sitefs/rescued), and
            // they belong to the test, not to the home of whoever runs it.
            environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                           "XDG_CACHE_HOME": root.appendingPathComponent("xdg-cache").path,
                           "XDG_DATA_HOME": root.appendingPathComponent("xdg-data").path]
        }
    }

    deinit { tearDown() }

    /// Runs `cleanup` at teardown, after the unmount (servers and proxies stop last, so the
    /// daemon never loses its server while it unmounts), in the reverse order of registration.
    public func onTearDown(_ cleanup: @escaping () -> Void) {
        cleanups.append(cleanup)
    }

    /// `sitefs login URL --user USER`, the password on stdin.
    public func login(_ url: String, user: String, password: String) throws {
        mountURL = url
        let login = try sitefs(["login", url, "--user", user], stdin: password + "\n")
        guard login.status == 0 else { throw ProcessFailure("sitefs login: \(login.err)") }
    }

    /// `sitefs mount URL MOUNTPOINT ARGUMENTS` (with `--cache-dir` unless mounting as
    /// `account`, whose cache goes where sitefs puts it by default), then a wait of up to
    /// `timeout` for the mount point to be in the mount table. Throws with the daemon's log
    /// when either fails.
    public func mount(_ arguments: [String], timeout: Duration = .seconds(10)) throws {
        let cacheArguments = account == nil ? ["--cache-dir", cache.path] : []
        let mount = try sitefs(["mount", mountURL, mountpoint.path] + cacheArguments + arguments)
        guard mount.status == 0 else { throw ProcessFailure("sitefs mount failed: \(mount.err)\nlog: \(daemonLog)") }
        if let home, cache == home {
            // The one mount's folder under the XDG cache folder.
            let folders = home.appendingPathComponent(".cache/sitefs")
            let made = try FileManager.default.contentsOfDirectory(atPath: folders.path)
            guard made.count == 1 else { throw ProcessFailure("expected one cache directory in \(folders.path), found \(made)") }
            cache = folders.appendingPathComponent(made[0])
        }
        guard eventually(timeout: timeout, { isMounted }) else {
            throw ProcessFailure("sitefs mount succeeded but \(mountpoint.path) is not mounted\nlog: \(daemonLog)")
        }
    }

    public var daemonLog: String { (try? String(contentsOf: cache.appendingPathComponent("sitefs.log"), encoding: .utf8)) ?? "" }

    public func path(_ relative: String) -> String { mountpoint.appendingPathComponent(relative).path }

    /// Files in the cache's content folder (local copies), but the emptied ones kept for new
    /// copies (`spare-N`, see `SpareCopyFiles`).
    public var localCopies: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cache.appendingPathComponent("content").path)) ?? [])
            .filter { !$0.hasPrefix("spare-") }
    }

    @discardableResult
    public func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try runAsUser(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: timeout)
    }

    /// A shell command, as a user would type it, run with the mount point as working directory.
    @discardableResult
    public func shell(_ command: String, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try runAsUser(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$0\" && " + command, mountpoint.path], timeout: timeout)
    }

    /// Runs a program as the mount's user (`account`, or this process's own).
    @discardableResult
    public func runAsUser(_ executable: URL, _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws
        -> ProcessOutcome {
        if let account {
            return try account.run(executable, arguments, stdin: stdin, timeout: timeout, environment: environment)
        }
        return try run(executable, arguments, stdin: stdin, timeout: timeout, environment: environment)
    }

    /// `sitefs sync`: every save on the server, or this throws with the daemon's log.
    public func sync(timeout: Int = 60) throws {
        let result = try sitefs(["sync", mountpoint.path, "--timeout", String(timeout)], timeout: TimeInterval(timeout + 30))
        guard result.status == 0 else {
            throw ProcessFailure("sitefs sync: \(result.out) \(result.err)\nlog: \(daemonLog.suffix(3000))")
        }
    }

    public var isMounted: Bool { MountTable.isMounted(mountpoint.path) }

    /// The daemons serving this mount point.
    public var daemons: [pid_t] { MountTable.daemons(serving: mountpoint.path) }

    /// SIGKILL to every daemon serving this mount point.
    public func killDaemons() {
        for pid in daemons { kill(pid, SIGKILL) }
    }

    /// Kills the daemon with SIGKILL and clears the dead mount (what a crash leaves), and
    /// waits until both are gone; false if they were not within 10 s.
    @discardableResult
    public func killDaemon() -> Bool {
        killDaemons()
        MountTable.forceUnmount(mountpoint.path)
        return eventually(timeout: .seconds(10)) { daemons.isEmpty && !isMounted }
    }

    /// Unmounts, stops what `onTearDown` registered and removes the folder; once only.
    public func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        _ = try? sitefs(["unmount", mountpoint.path, "--no-wait"], timeout: 30)
        MountTable.release(mountpoint.path)
        for cleanup in cleanups.reversed() { cleanup() }
        // SITEFS_TEST_KEEP=1 keeps the daemon's log, cache and journal to read after a failure.
        if ProcessInfo.processInfo.environment["SITEFS_TEST_KEEP"] == "1" {
            print("kept: \(root.path)")
        } else {
            try? FileManager.default.removeItem(at: root)
        }
    }
}
