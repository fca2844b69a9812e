import Foundation
import SitefsTestSupport
import Testing

/// A real mount of any `ScenarioServer`: `sitefs login` and `sitefs mount` as a user runs
/// them (the daemon its own process, config and cache in a temp dir), optionally through a
/// fault proxy. `tearDown()` always unmounts (falling back to a lazy unmount and killing the
/// daemon) and stops the server, so a failing scenario leaves nothing behind.
final class ScenarioMount: @unchecked Sendable {
    static let password = "site-pass"

    let root: URL
    let cache: URL
    let mountpoint: URL
    let server: any ScenarioServer
    let proxy: FaultProxy?
    /// What the mount was given: the server's URL, or the proxy's.
    let mountURL: String
    private let environment: [String: String]
    private let mountArguments: [String]
    private var tornDown = false

    /// `prepare` puts what the scenario starts from on the server, before the mount.
    init(_ backend: ScenarioBackend, throughFaultProxy: Bool = false, extraMountArguments: [String] = [],
         prepare: (any ScenarioServer) throws -> Void = { _ in }) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-scenario-\(UUID().uuidString.prefix(8))")
        cache = root.appendingPathComponent("cache")
        mountpoint = root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                       "XDG_CACHE_HOME": root.appendingPathComponent("xdg-cache").path]
        do {
            server = try backend.start(in: root)
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        do {
            try prepare(server)
            if throughFaultProxy {
                let proxy = try FaultProxy(upstreamPort: server.port)
                self.proxy = proxy
                mountURL = server.url(throughPort: proxy.port)
            } else {
                proxy = nil
                mountURL = server.url
            }
        } catch {
            server.stop()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        // Listings and items are revalidated after a second (WebDAV has no change feed).
        mountArguments = ["--poll-interval", "0.3", "--cache-ttl", "1", "--log-level", "debug", "--cache-dir", cache.path]
            + extraMountArguments
        do {
            let login = try sitefs(["login", mountURL, "--user", "anna"], stdin: Self.password + "\n")
            guard login.status == 0 else { throw ProcessFailure("sitefs login: \(login.err)") }
            try mount()
        } catch {
            tearDown()
            throw error
        }
    }

    deinit { tearDown() }

    func mount() throws {
        let result = try sitefs(["mount", mountURL, mountpoint.path] + mountArguments)
        guard result.status == 0 else { throw ProcessFailure("sitefs mount failed: \(result.err)\nlog: \(daemonLog)") }
    }

    /// Files in the cache's content folder (local copies).
    var localCopies: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cache.appendingPathComponent("content").path)) ?? []
    }

    var daemonLog: String { (try? String(contentsOf: cache.appendingPathComponent("sitefs.log"), encoding: .utf8)) ?? "" }

    func path(_ relative: String) -> String { mountpoint.appendingPathComponent(relative).path }

    @discardableResult
    func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try run(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: timeout, environment: environment)
    }

    /// A shell command as a user would type it, in the mount point.
    @discardableResult
    func shell(_ command: String, timeout: TimeInterval = 60) throws -> (status: Int32, out: String, err: String) {
        try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$0\" && " + command, mountpoint.path], timeout: timeout,
                environment: environment)
    }

    /// `sitefs sync`: every save on the server, or the test fails here.
    func sync(timeout: Int = 60) throws {
        let result = try sitefs(["sync", mountpoint.path, "--timeout", String(timeout)], timeout: TimeInterval(timeout + 30))
        try #require(result.status == 0, "sitefs sync: \(result.out) \(result.err)\nlog: \(daemonLog.suffix(3000))")
    }

    /// Kills the daemon with SIGKILL and clears the dead mount (what a crash leaves).
    func killDaemon() {
        for pid in daemons { kill(pid, SIGKILL) }
        _ = try? run(URL(fileURLWithPath: "/bin/fusermount3"), ["-u", "-z", mountpoint.path], timeout: 15)
        _ = eventually(timeout: .seconds(10)) { daemons.isEmpty && !isMounted }
    }

    func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        _ = try? sitefs(["unmount", mountpoint.path, "--no-wait"], timeout: 30)
        if isMounted { _ = try? run(URL(fileURLWithPath: "/bin/fusermount3"), ["-u", "-z", mountpoint.path], timeout: 15) }
        for pid in daemons { kill(pid, SIGKILL) }
        proxy?.stop()
        server.stop()
        if ProcessInfo.processInfo.environment["SITEFS_TEST_KEEP"] == "1" {
            print("kept: \(root.path)")
        } else {
            try? FileManager.default.removeItem(at: root)
        }
    }

    var isMounted: Bool { MountFixture.isMounted(mountpoint.path) }

    var daemons: [pid_t] { MountFixture.daemons(serving: mountpoint.path) }
}
