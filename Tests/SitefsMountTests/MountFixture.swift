import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// A real mount for a test: `sitefs-server` on 127.0.0.1 (random port, temp data dir),
/// `sitefs login`, and `sitefs mount` starting the daemon as its own process, with config
/// and cache in the temp dir. `tearDown()` always unmounts (falling back to a lazy
/// unmount and killing the daemon), so a failing test never leaves a mount behind.
///
/// With `account`, everything the user runs (`sitefs`, `shell`) runs as that unprivileged
/// account, in a home of its own under the temp dir, with the cache where sitefs puts it by
/// default (the XDG cache folder) and the mount made through fusermount3.
final class MountFixture: @unchecked Sendable {
    static let password = "site-pass"

    let root: URL
    let data: URL
    /// The mount's cache directory.
    private(set) var cache: URL
    let mountpoint: URL
    /// The user's environment for `sitefs` and `shell`.
    let environment: [String: String]
    /// Who runs `sitefs` and `shell`: nil for this process's own user.
    let account: TestAccount?
    /// The user's home with `account` (their XDG config and cache folders are in it).
    let home: URL?
    let server: ServerProcess
    /// Between the daemon and the server when asked for: injects network faults.
    let proxy: FaultProxy?
    /// Where the server keeps its state.
    let store: Store
    /// The URL the mount uses: the server's, or the proxy's.
    let mountURL: String
    /// The API as the test's own client, signed in as anna (not the mount's session).
    let api: Curl
    private var tornDown = false

    /// The server's state: a data folder of the fixture's own (SQLite), or a PostgreSQL
    /// database and blob folder that several fixtures' servers share (instances of one
    /// deployment; the first one seeds it).
    enum Store {
        case sqlite
        case postgres(PostgresTestDatabase, blobs: URL, seeding: Bool)
    }

    /// Sites: "Harbour Tower" and "Riverside" (read-write) and "Archive" (read-only) for anna.
    /// With `mounting` false, everything is ready (server, sign-in) but the test mounts itself.
    init(pageSize: Int = 100, extraMountArguments: [String] = [], throughFaultProxy: Bool = false, as account: TestAccount? = nil,
         mounting: Bool = true, store: Store = .sqlite) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-mount-\(UUID().uuidString.prefix(8))")
        data = root.appendingPathComponent("server")
        self.store = store
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
            environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                           "XDG_CACHE_HOME": root.appendingPathComponent("xdg-cache").path]
        }
        let admin = ServerProcess.executable
        let storageArguments: [String], serverEnvironment: [String: String], seeding: Bool
        switch store {
        case .sqlite:
            (storageArguments, serverEnvironment, seeding) = (["--data", data.path], [:], true)
        case .postgres(let database, let blobs, let seeds):
            (storageArguments, serverEnvironment, seeding) = (["--database", database.url, "--blobs", blobs.path], database.environment, seeds)
        }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for arguments in [["user", "add", "anna"], ["site", "add", "Harbour Tower"], ["site", "add", "Riverside"],
                          ["site", "add", "Archive"], ["grant", "anna", "Harbour Tower"], ["grant", "anna", "Riverside"],
                          ["grant", "anna", "Archive", "--read-only"]] where seeding {
            let result = try run(admin, arguments + storageArguments, stdin: Self.password + "\n", environment: serverEnvironment)
            guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
        }
        server = try ServerProcess(storage: storageArguments, environment: serverEnvironment, logFolder: root)
        var client = Curl(baseURL: server.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"\#(Self.password)"}"#)
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        api = client

        if throughFaultProxy {
            let proxy = try FaultProxy(upstreamPort: Int(server.baseURL.split(separator: ":").last!)!)
            self.proxy = proxy
            mountURL = proxy.url
        } else {
            proxy = nil
            mountURL = server.baseURL
        }
        let login = try sitefs(["login", mountURL, "--user", "anna"], stdin: Self.password + "\n")
        guard login.status == 0 else { throw ProcessFailure("sitefs login: \(login.err)") }
        guard mounting else { return }
        let cacheArguments = account == nil ? ["--cache-dir", cache.path] : []
        let mount = try sitefs(["mount", mountURL, mountpoint.path, "--page-size", String(pageSize),
                                "--poll-interval", "0.3", "--log-level", "debug"] + cacheArguments + extraMountArguments)
        guard mount.status == 0 else {
            tearDown()
            throw ProcessFailure("sitefs mount failed: \(mount.err)\nlog: \(daemonLog)")
        }
        if let home {
            // The one mount's folder under the XDG cache folder.
            let folders = home.appendingPathComponent(".cache/sitefs")
            let made = try FileManager.default.contentsOfDirectory(atPath: folders.path)
            guard made.count == 1 else { throw ProcessFailure("expected one cache directory in \(folders.path), found \(made)") }
            cache = folders.appendingPathComponent(made[0])
        }
    }

    deinit { tearDown() }

    var daemonLog: String { (try? String(contentsOf: cache.appendingPathComponent("sitefs.log"), encoding: .utf8)) ?? "" }

    func path(_ relative: String) -> String { mountpoint.appendingPathComponent(relative).path }

    @discardableResult
    func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try runAsUser(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: timeout)
    }

    /// A shell command, as a user would type it, run with the mount point as working directory.
    @discardableResult
    func shell(_ command: String, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try runAsUser(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$0\" && " + command, mountpoint.path], timeout: timeout)
    }

    /// Runs a program as the mount's user (`account`, or this process's own).
    @discardableResult
    func runAsUser(_ executable: URL, _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws
        -> (status: Int32, out: String, err: String) {
        if let account {
            return try account.run(executable, arguments, stdin: stdin, timeout: timeout, environment: environment)
        }
        return try run(executable, arguments, stdin: stdin, timeout: timeout, environment: environment)
    }

    // MARK: The server side, through its API

    func sites() throws -> [Item] { try api.sites() }

    func children(_ id: String) throws -> [Item] { try api.children(of: id) }

    /// The server item at a mount-relative path ("Harbour Tower/Plans/a.txt"), or nil.
    func serverItem(_ relative: String) throws -> Item? { try api.item(atPath: relative) }

    func serverContent(_ relative: String) throws -> String? {
        guard let item = try serverItem(relative) else { return nil }
        return try api.call("GET", "/v1/items/\(item.id)/content").body
    }

    /// Files in the cache's content folder (local copies).
    var localCopies: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cache.appendingPathComponent("content").path)) ?? []
    }

    // MARK: Teardown

    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        _ = try? sitefs(["unmount", mountpoint.path, "--no-wait"], timeout: 30)
        if isMounted {
            _ = try? run(URL(fileURLWithPath: "/bin/fusermount3"), ["-u", "-z", mountpoint.path], timeout: 15)
        }
        killDaemons()
        proxy?.stop()
        server.stop()
        // SITEFS_TEST_KEEP=1 keeps the daemon's log, cache and journal to read after a failure.
        if ProcessInfo.processInfo.environment["SITEFS_TEST_KEEP"] == "1" {
            print("kept: \(root.path)")
        } else {
            try? FileManager.default.removeItem(at: root)
        }
    }

    var isMounted: Bool { Self.isMounted(mountpoint.path) }

    /// Whether `path` is a mount point, from /proc/self/mounts (test paths need no escapes).
    static func isMounted(_ path: String) -> Bool {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").contains(" \(path) ")
    }

    /// Any daemon still running for this fixture's mount point.
    func killDaemons() {
        for pid in daemons { kill(pid, SIGKILL) }
    }

    /// The daemons serving this fixture's mount point.
    var daemons: [pid_t] { Self.daemons(serving: mountpoint.path) }

    /// The daemons serving `mountpoint` (found by their command lines).
    static func daemons(serving mountpoint: String) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap(Int32.init).filter { pid in
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.contains("--daemon-child") && arguments.contains(mountpoint)
        }
    }
}

