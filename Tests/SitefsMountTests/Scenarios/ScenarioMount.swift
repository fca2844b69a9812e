import Foundation
import SitefsTestSupport
import Testing

/// A real mount of any `ScenarioServer`, optionally through a fault proxy: a `DaemonMount`
/// of it (`sitefs login` and `sitefs mount`, the daemon its own process), whose members it
/// forwards. `tearDown()` always unmounts, then stops the proxy and the server, so a failing
/// scenario leaves nothing behind.
@dynamicMemberLookup
final class ScenarioMount: @unchecked Sendable {
    static let password = "site-pass"

    let daemonMount: DaemonMount
    let server: any ScenarioServer
    let proxy: FaultProxy?
    private let mountArguments: [String]

    /// `prepare` puts what the scenario starts from on the server, before the mount.
    init(_ backend: ScenarioBackend, throughFaultProxy: Bool = false, extraMountArguments: [String] = [],
         prepare: (any ScenarioServer) throws -> Void = { _ in }) throws {
        let daemonMount = try DaemonMount(prefix: "scenario")
        self.daemonMount = daemonMount
        // Listings and items are revalidated after a second (WebDAV has no change feed).
        mountArguments = ["--poll-interval", "0.3", "--cache-ttl", "1", "--log-level", "debug"] + extraMountArguments
        do {
            let server = try backend.start(in: daemonMount.root)
            self.server = server
            daemonMount.onTearDown { server.stop() }
            try prepare(server)
            let mountURL: String
            if throughFaultProxy {
                let proxy = try FaultProxy(upstreamPort: server.port)
                self.proxy = proxy
                daemonMount.onTearDown { proxy.stop() }
                mountURL = server.url(throughPort: proxy.port)
            } else {
                proxy = nil
                mountURL = server.url
            }
            try daemonMount.login(mountURL, user: "anna", password: Self.password)
            try mount()
        } catch {
            daemonMount.tearDown()
            throw error
        }
    }

    /// Mounts (again, after `killDaemon`) with the scenario's arguments.
    func mount() throws {
        try daemonMount.mount(mountArguments)
    }

    /// The mount's own members: `root`, `mountpoint`, `cache`, `mountURL`, `daemonLog`,
    /// `localCopies`, `isMounted`, `daemons`.
    subscript<T>(dynamicMember keyPath: KeyPath<DaemonMount, T>) -> T { daemonMount[keyPath: keyPath] }

    func path(_ relative: String) -> String { daemonMount.path(relative) }

    @discardableResult
    func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try daemonMount.sitefs(arguments, stdin: stdin, timeout: timeout)
    }

    /// A shell command as a user would type it, in the mount point.
    @discardableResult
    func shell(_ command: String, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try daemonMount.shell(command, timeout: timeout)
    }

    /// `sitefs sync`: every save on the server, or the test fails here.
    func sync(timeout: Int = 60) throws { try daemonMount.sync(timeout: timeout) }

    /// Kills the daemon with SIGKILL and clears the dead mount (what a crash leaves).
    func killDaemon() {
        #expect(daemonMount.killDaemon(), "the killed daemon or its mount was still there after 10 s")
    }

    func tearDown() { daemonMount.tearDown() }
}
