import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// A real mount for a test: `sitefs-server` on 127.0.0.1 (random port, temp data dir),
/// `sitefs login`, and `sitefs mount` starting the daemon as its own process, with config
/// and cache in the temp dir. `tearDown()` always unmounts (falling back to a lazy
/// unmount and killing the daemon), so a failing test never leaves a mount behind.
final class MountFixture: @unchecked Sendable {
    static let password = "site-pass"

    let root: URL
    let data: URL
    let cache: URL
    let mountpoint: URL
    let environment: [String: String]
    let server: ServerProcess
    /// Between the daemon and the server when asked for: injects network faults.
    let proxy: FaultProxy?
    /// The URL the mount uses: the server's, or the proxy's.
    let mountURL: String
    /// The API as the test's own client, signed in as anna (not the mount's session).
    let api: Curl
    private var tornDown = false

    /// Sites: "Harbour Tower" and "Riverside" (read-write) and "Archive" (read-only) for anna.
    init(pageSize: Int = 100, extraMountArguments: [String] = [], throughFaultProxy: Bool = false) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-mount-\(UUID().uuidString.prefix(8))")
        data = root.appendingPathComponent("server")
        cache = root.appendingPathComponent("cache")
        mountpoint = root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                       "XDG_CACHE_HOME": root.appendingPathComponent("xdg-cache").path]
        let admin = ServerProcess.executable
        for arguments in [["user", "add", "anna"], ["site", "add", "Harbour Tower"], ["site", "add", "Riverside"],
                          ["site", "add", "Archive"], ["grant", "anna", "Harbour Tower"], ["grant", "anna", "Riverside"],
                          ["grant", "anna", "Archive", "--read-only"]] {
            let result = try run(admin, arguments + ["--data", data.path], stdin: Self.password + "\n")
            guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
        }
        server = try ServerProcess(dataDirectory: data)
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
        let mount = try sitefs(["mount", mountURL, mountpoint.path, "--cache-dir", cache.path, "--page-size", String(pageSize),
                                "--poll-interval", "0.3", "--log-level", "debug"] + extraMountArguments)
        guard mount.status == 0 else {
            tearDown()
            throw ProcessFailure("sitefs mount failed: \(mount.err)\nlog: \(daemonLog)")
        }
    }

    deinit { tearDown() }

    var daemonLog: String { (try? String(contentsOf: cache.appendingPathComponent("sitefs.log"), encoding: .utf8)) ?? "" }

    func path(_ relative: String) -> String { mountpoint.appendingPathComponent(relative).path }

    @discardableResult
    func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try run(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: timeout, environment: environment)
    }

    /// A shell command, as a user would type it, run with the mount point as working directory.
    @discardableResult
    func shell(_ command: String, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$0\" && " + command, mountpoint.path], timeout: timeout)
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` passes.
    func eventually(timeout: TimeInterval = 10, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if try condition() { return true }
            usleep(50_000)
        } while Date() < deadline
        return false
    }

    // MARK: The server side, through its API

    func sites() throws -> [Item] {
        try JSONDecoder().decode(ItemPage.self, from: Data(api.call("GET", "/v1/sites").body.utf8)).items
    }

    func children(_ id: String) throws -> [Item] {
        var items: [Item] = []
        var cursor: String?
        repeat {
            let page = try JSONDecoder().decode(ItemPage.self, from: Data(api.call(
                "GET", "/v1/items/\(id)/children?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")).body.utf8))
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// The server item at a mount-relative path ("Harbour Tower/Plans/a.txt"), or nil.
    func serverItem(_ relative: String) throws -> Item? {
        let components = relative.split(separator: "/").map(String.init)
        guard let siteName = components.first, var current = try sites().first(where: { $0.name == siteName }) else { return nil }
        for name in components.dropFirst() {
            guard let next = try children(current.id).first(where: { $0.name == name }) else { return nil }
            current = next
        }
        return current
    }

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

    var isMounted: Bool {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").contains(" \(mountpoint.path) ")
    }

    /// Any daemon still running for this fixture's cache dir (found by its command line).
    func killDaemons() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for pid in entries.compactMap(Int32.init) {
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.contains("--daemon-child"), arguments.contains(cache.path) { kill(pid, SIGKILL) }
        }
    }
}

/// FUSE tests need /dev/fuse (always there on CI, where they must run).
let fuseAvailable = FileManager.default.fileExists(atPath: "/dev/fuse")
