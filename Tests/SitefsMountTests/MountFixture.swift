import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// A real mount of `sitefs-server` for a test: the server on 127.0.0.1 (random port, its
/// data in the test's folder), optionally behind a fault proxy, and a `DaemonMount` of it
/// (`sitefs login` and `sitefs mount`, the daemon its own process), whose members it
/// forwards. `tearDown()` always unmounts, then stops the proxy and the server, so a failing
/// test never leaves a mount behind.
@dynamicMemberLookup
final class MountFixture: @unchecked Sendable {
    static let password = "site-pass"

    /// The mount, its folder and its user.
    let mount: DaemonMount
    /// The server's data folder (SQLite store).
    let data: URL
    let server: ServerProcess
    /// Between the daemon and the server when asked for: injects network faults.
    let proxy: FaultProxy?
    /// Where the server keeps its state.
    let store: Store
    /// The API as the test's own client, signed in as anna (not the mount's session).
    let api: Curl

    /// The server's state: a data folder of the fixture's own (SQLite), or a PostgreSQL
    /// database and blob folder that several fixtures' servers share (instances of one
    /// deployment; the first one seeds it).
    enum Store {
        case sqlite
        case postgres(PostgresTestDatabase, blobs: URL, seeding: Bool)
    }

    /// Sites: "Harbour Tower" and "Riverside" (read-write) and "Archive" (read-only) for anna.
    /// With `mounting` false, everything is ready (server, sign-in) but the test mounts itself.
    /// `serverArguments`: more options for `sitefs-server serve` (e.g. `--max-upload`).
    init(pageSize: Int = 100, extraMountArguments: [String] = [], throughFaultProxy: Bool = false, as account: TestAccount? = nil,
         mounting: Bool = true, store: Store = .sqlite, serverArguments: [String] = []) throws {
        let mount = try DaemonMount(prefix: "mount", as: account)
        self.mount = mount
        data = mount.root.appendingPathComponent("server")
        self.store = store
        do {
            let admin = ServerProcess.executable
            let storageArguments: [String], serverEnvironment: [String: String], seeding: Bool
            switch store {
            case .sqlite:
                (storageArguments, serverEnvironment, seeding) = (["--data", data.path], [:], true)
            case .postgres(let database, let blobs, let seeds):
                (storageArguments, serverEnvironment, seeding) = (["--database", database.url, "--blobs", blobs.path], database.environment, seeds)
            }
            for arguments in [["user", "add", "anna"], ["site", "add", "Harbour Tower"], ["site", "add", "Riverside"],
                              ["site", "add", "Archive"], ["grant", "anna", "Harbour Tower"], ["grant", "anna", "Riverside"],
                              ["grant", "anna", "Archive", "--read-only"]] where seeding {
                let result = try run(admin, arguments + storageArguments, stdin: Self.password + "\n", environment: serverEnvironment)
                guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
            }
            let server = try ServerProcess(storage: storageArguments, environment: serverEnvironment, logFolder: mount.root,
                                           extraArguments: serverArguments)
            self.server = server
            mount.onTearDown { server.stop() }
            var client = Curl(baseURL: server.baseURL)
            let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"\#(Self.password)"}"#)
            client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
            api = client

            let mountURL: String
            if throughFaultProxy {
                let proxy = try FaultProxy(upstreamPort: Int(server.baseURL.split(separator: ":").last!)!)
                self.proxy = proxy
                mount.onTearDown { proxy.stop() }
                mountURL = proxy.url
            } else {
                proxy = nil
                mountURL = server.baseURL
            }
            try mount.login(mountURL, user: "anna", password: Self.password)
            guard mounting else { return }
            try mount.mount(["--page-size", String(pageSize), "--poll-interval", "0.3", "--log-level", "debug"] + extraMountArguments)
        } catch {
            mount.tearDown()
            throw error
        }
    }

    /// The mount's own members: `root`, `mountpoint`, `cache`, `environment`, `account`,
    /// `home`, `mountURL`, `daemonLog`, `localCopies`, `isMounted`, `daemons`.
    subscript<T>(dynamicMember keyPath: KeyPath<DaemonMount, T>) -> T { mount[keyPath: keyPath] }

    func path(_ relative: String) -> String { mount.path(relative) }

    @discardableResult
    func sitefs(_ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try mount.sitefs(arguments, stdin: stdin, timeout: timeout)
    }

    /// A shell command, as a user would type it, run with the mount point as working directory.
    @discardableResult
    func shell(_ command: String, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try mount.shell(command, timeout: timeout)
    }

    /// Runs a program as the mount's user (`account`, or this process's own).
    @discardableResult
    func runAsUser(_ executable: URL, _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try mount.runAsUser(executable, arguments, stdin: stdin, timeout: timeout)
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

    // MARK: Teardown

    /// Unmounts (by force if need be), stops the proxy and the server, removes the folder.
    func tearDown() { mount.tearDown() }

    /// Any daemon still running for this fixture's mount point.
    func killDaemons() { mount.killDaemons() }
}
