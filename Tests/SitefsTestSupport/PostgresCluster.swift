import Foundation
import Synchronization

/// A PostgreSQL server for tests of the PostgreSQL store: a throwaway cluster this process
/// starts from Debian's programs, or the one `scripts/test` started for the whole run and
/// named in the environment. Each test takes a database of its own from it
/// (`createDatabase()`), so tests share one server and never each other's tables.
///
/// A cluster started here lives in a fresh folder `/tmp/sitefs-pg-XXXXXX` (mode 0700): its
/// data, its log, and its Unix socket, whose path must stay within the 107 bytes a socket
/// address holds (a TMPDIR may be long), in folders the server's account can search (/tmp
/// is; root's TMPDIR may not be). The server listens on 127.0.0.1 and a random port and
/// signs in only the superuser `sitefs`, with a random password (SCRAM-SHA-256), so nothing
/// else on the machine reaches it by accident.
///
/// PostgreSQL refuses to run as root: when the tests run as root (CI), initdb, pg_ctl and
/// the server run as the `postgres` account Debian's package makes (`runuser -u postgres`),
/// which owns the folder; the test, being root, still reads its log. Run by anyone else,
/// they run as that user.
///
/// The server is this process's child, in the foreground (as the web servers of
/// `WebServerDaemon` are), not a daemon from `pg_ctl start`: Foundation's `Process` knows a
/// child has exited when a socket it hands the child closes, and a daemon the child leaves
/// behind inherits that socket, so pg_ctl would never be seen to exit. Readiness is what
/// `pg_ctl -w` checks: the status line "ready" in the server's lock file. Stopping is
/// `pg_ctl stop`, which signals the server by the pid in that file; the child is then reaped.
/// Every child process runs with a deadline, and is killed and reaped past it.
///
/// Clusters this process started are removed at exit (`atexit`) if no test removed them. A
/// process killed outright leaves its server and folder behind, which is why `scripts/test`
/// starts one cluster for the whole run and removes it whatever happens
/// (`scripts/lib/postgres-cluster.sh`), and names it in SITEFS_TEST_POSTGRES_URL.
public final class PostgresCluster: Sendable {
    /// 127.0.0.1, or the host SITEFS_TEST_POSTGRES_URL names.
    public let host: String
    public let port: Int
    /// `sitefs`: the superuser initdb made, so it may create and drop databases.
    public let user: String
    /// 32 hex digits, made fresh for each cluster.
    public let password: String
    /// The database psql signs in to when there is none of the test's yet (to create or drop
    /// one): `postgres`, or the one SITEFS_TEST_POSTGRES_URL names.
    public let maintenanceDatabase: String
    /// The cluster this process started; nil for the one SITEFS_TEST_POSTGRES_URL names,
    /// which is not this process's to stop or remove.
    private let instance: Instance?
    private let psqlProgram: URL

    private init(host: String, port: Int, user: String, password: String, maintenanceDatabase: String,
                 instance: Instance?, psql: URL) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.maintenanceDatabase = maintenanceDatabase
        self.instance = instance
        psqlProgram = psql
    }

    /// A private cluster nobody removed goes with the last reference to it (a test that threw
    /// before its `remove()`). The shared one is kept to the end and removed at exit.
    deinit { remove() }

    // MARK: Getting one

    /// Whether tests can have a cluster here: SITEFS_TEST_POSTGRES_URL names one (and psql is
    /// installed), or PostgreSQL's programs are (and, for root, its `postgres` account). CI
    /// always can (`scripts/test` installs postgresql), so there the PostgreSQL suites run.
    public static var isAvailable: Bool {
        if let url = ProcessInfo.processInfo.environment["SITEFS_TEST_POSTGRES_URL"], !url.isEmpty { return onPath("psql") != nil }
        guard (try? programsFolder()) != nil else { return false }
        return geteuid() != 0 || getpwnam(serverAccountName) != nil
    }

    /// The one cluster of this test process, made on first use (from any thread; the others
    /// wait for it), so a suite does not pay a start per test: the one SITEFS_TEST_POSTGRES_URL
    /// names (`postgres://sitefs@127.0.0.1:PORT/postgres`, the password in
    /// SITEFS_TEST_POSTGRES_PASSWORD) when set, else one this process starts and removes at
    /// exit. A failed start is kept and thrown again to every later caller, so a machine
    /// without PostgreSQL fails each test at once instead of after another wait.
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cached in
            if let cached { return try cached.get() }
            let made = Result { try fromEnvironment() ?? start() }
            cached = made
            return try made.get()
        }
    }

    /// Held while the shared cluster starts. Lock order: before `live` (a start registers the
    /// cluster it makes); never taken while another lock is held.
    private static let sharedCluster = Mutex<Result<PostgresCluster, any Error>?>(nil)

    /// A new cluster of the calling test's own, started and accepting connections: for a test
    /// that stops and starts PostgreSQL under running servers. `remove()` it when done (its
    /// last reference going away, or the process exiting, removes it too).
    public static func start() throws -> PostgresCluster {
        let programs = try programsFolder()
        guard let psql = onPath("psql") ?? executable(programs.appendingPathComponent("psql")) else {
            throw ProcessFailure("psql is not installed (apt-get install postgresql-client)")
        }
        let account = try geteuid() == 0 ? serverAccount() : nil
        let instance = Instance(directory: try privateFolder(for: account), programs: programs, account: account)
        register(instance)
        do {
            let password = randomHex(bytes: 16)
            try instance.initialize(user: clusterUser, password: password)
            // The port is free when picked, but another process may bind it before the server
            // does: the server then exits, and another port is tried.
            var attempt = 1
            while true {
                let port = Int(try TestServer.unusedPort())
                do {
                    try instance.start(port: port)
                    return PostgresCluster(host: "127.0.0.1", port: port, user: clusterUser, password: password,
                                           maintenanceDatabase: "postgres", instance: instance, psql: psql)
                } catch is PortTaken where attempt < 3 {
                    attempt += 1
                }
            }
        } catch {
            instance.remove()
            throw error
        }
    }

    /// The cluster SITEFS_TEST_POSTGRES_URL names, or nil when it is unset.
    private static func fromEnvironment() throws -> PostgresCluster? {
        let environment = ProcessInfo.processInfo.environment
        guard let text = environment["SITEFS_TEST_POSTGRES_URL"], !text.isEmpty else { return nil }
        guard var components = URLComponents(string: text), let scheme = components.scheme,
              ["postgres", "postgresql"].contains(scheme), let host = components.host, !host.isEmpty else {
            throw ProcessFailure("SITEFS_TEST_POSTGRES_URL is not a postgres://USER@HOST:PORT/DATABASE URL")
        }
        let password = environment["SITEFS_TEST_POSTGRES_PASSWORD"] ?? components.password ?? ""
        components.password = nil
        guard let psql = onPath("psql") else {
            throw ProcessFailure("psql is not on PATH; the tests reach \(components.string ?? "") with it (apt-get install postgresql-client)")
        }
        let database = String(components.path.drop { $0 == "/" })
        return PostgresCluster(host: host, port: components.port ?? 5432, user: components.user ?? clusterUser, password: password,
                               maintenanceDatabase: database.isEmpty ? "postgres" : database, instance: nil, psql: psql)
    }

    // MARK: Databases

    /// A new, empty database of a random name (`t_` and 16 hex digits), owned by `user`.
    public func createDatabase() throws -> PostgresTestDatabase {
        let name = "t_" + Self.randomHex(bytes: 8)
        try psql("CREATE DATABASE \"\(name)\"")
        return PostgresTestDatabase(name: name, cluster: self)
    }

    /// Runs `sql` with psql in `database` (the maintenance database when nil) as `user`, and
    /// returns the rows it printed: one a line, columns split by `|`, no headers. The password
    /// reaches psql in its environment, never its arguments. Throws with psql's stderr when
    /// psql cannot connect or a statement fails; psql gives up connecting after 10 s.
    @discardableResult
    public func psql(_ sql: String, database: String? = nil) throws -> String {
        let arguments = ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", String(port), "-U", user,
                         "-d", database ?? maintenanceDatabase, "-c", sql]
        let outcome = try Self.execute(psqlProgram, arguments, password: password)
        guard outcome.status == 0 else {
            throw ProcessFailure("psql \(sql.debugDescription) in \(database ?? maintenanceDatabase) on \(host):\(port) failed (\(outcome.status)): \(outcome.err)")
        }
        return outcome.out
    }

    // MARK: Stopping and starting

    /// Stops the server (a fast shutdown: open connections are ended) and keeps its data,
    /// for `startAgain()`. Only for a cluster this process started.
    public func stop() throws {
        try ownInstance("stopped").stop(port: port)
    }

    /// Starts the stopped server again on the same port (the servers under test were given
    /// it), and returns once it accepts connections. Throws if another process took the port
    /// meanwhile. Only for a cluster this process started.
    public func startAgain() throws {
        do {
            try ownInstance("started again").start(port: port)
        } catch is PortTaken {
            throw ProcessFailure("PostgreSQL cannot start again: another process took port \(port); log: \(instance?.logTail ?? "")")
        }
    }

    /// Stops the server at once if it runs and deletes its folder. Safe to call again; does
    /// nothing to the cluster SITEFS_TEST_POSTGRES_URL names.
    public func remove() {
        instance?.remove()
    }

    private func ownInstance(_ what: String) throws -> Instance {
        guard let instance else {
            throw ProcessFailure("the PostgreSQL cluster SITEFS_TEST_POSTGRES_URL names cannot be \(what) by a test; use PostgresCluster.start()")
        }
        return instance
    }

    // MARK: Removal at exit

    /// The clusters this process started and has not removed yet, removed by an exit
    /// handler set with the first. Lock order: last; no other lock is taken while it is held.
    private static let live = Mutex<(instances: [ObjectIdentifier: Instance], exitHandlerSet: Bool)>(([:], false))

    private static func register(_ instance: Instance) {
        let first = live.withLock { live in
            live.instances[ObjectIdentifier(instance)] = instance
            defer { live.exitHandlerSet = true }
            return !live.exitHandlerSet
        }
        if first { atexit { PostgresCluster.removeAllAtExit() } }
    }

    private static func unregister(_ instance: Instance) {
        _ = live.withLock { $0.instances.removeValue(forKey: ObjectIdentifier(instance)) }
    }

    /// Runs in `exit()`: whatever the test threads still do, the servers stop at once (an
    /// immediate shutdown: nothing in them is kept) and their folders go.
    private static func removeAllAtExit() {
        let instances = live.withLock { live in
            defer { live.instances = [:] }
            return Array(live.instances.values)
        }
        for instance in instances { instance.remove() }
    }

    // MARK: A cluster of this process

    /// A cluster folder, the programs that run it, the account they run as, and the server
    /// while it runs.
    private final class Instance: @unchecked Sendable {
        // @unchecked: the server's Process is only touched under `state`.
        let directory: URL
        let programs: URL
        /// `postgres` when the tests run as root, else nil (the current user).
        let account: TestAccount?
        /// Held while the server starts or stops, so a stop, a start and a removal of one
        /// cluster happen one after the other. Lock order: after `sharedCluster` (the shared
        /// cluster starts under it); no other lock is taken while it is held.
        private let state = Mutex(RunState.stopped)

        private enum RunState {
            case running(Process)
            case stopped
            case removed
        }

        init(directory: URL, programs: URL, account: TestAccount?) {
            self.directory = directory
            self.programs = programs
            self.account = account
        }

        var data: URL { directory.appendingPathComponent("data") }
        var log: URL { directory.appendingPathComponent("log") }

        /// The last lines the server logged.
        var logTail: String {
            String(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(3000))
        }

        /// initdb: the superuser `user` with `password`, SCRAM-SHA-256 for every connection,
        /// UTF-8 and the C.UTF-8 locale (built into Debian's libc; byte order for text).
        /// `--no-sync`: nothing is flushed to disk, for speed, as with fsync=off below.
        func initialize(user: String, password: String) throws {
            // initdb reads the password from a file, never argv; readable by initdb's account only.
            let passwordFile = directory.appendingPathComponent("password")
            guard FileManager.default.createFile(atPath: passwordFile.path, contents: Data((password + "\n").utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw ProcessFailure("cannot write \(passwordFile.path)")
            }
            defer { try? FileManager.default.removeItem(at: passwordFile) }
            try account?.own(passwordFile.path, mode: 0o600)
            let outcome = try PostgresCluster.execute(
                programs.appendingPathComponent("initdb"),
                ["-D", data.path, "-U", user, "--auth=scram-sha-256", "--pwfile=\(passwordFile.path)", "-E", "UTF8",
                 "--locale=C.UTF-8", "--no-sync"],
                as: account, in: directory)
            guard outcome.status == 0 else { throw ProcessFailure("initdb failed (\(outcome.status)): \(outcome.err)\(outcome.out)") }
        }

        /// Starts the server on `port` unless it runs, and returns once it accepts
        /// connections. Throws `PortTaken` when another process has the port.
        func start(port: Int) throws {
            try state.withLock { state in
                switch state {
                case .removed: throw ProcessFailure("the PostgreSQL cluster in \(directory.path) was removed")
                case .running: return
                case .stopped: state = .running(try launch(port: port))
                }
            }
        }

        /// A fast shutdown (open connections are ended), keeping the data.
        func stop(port: Int) throws {
            try state.withLock { state in
                switch state {
                case .removed: throw ProcessFailure("the PostgreSQL cluster on port \(port) was removed")
                case .stopped: return
                case .running(let server):
                    let outcome = try pgCtl(["-m", "fast", "-w", "-t", "30", "stop"])
                    guard outcome.status == 0 else { throw ProcessFailure("pg_ctl stop failed (\(outcome.status)): \(outcome.err)\(outcome.out)") }
                    reap(server)
                    state = .stopped
                }
            }
        }

        /// Stops the server at once if it runs (an immediate shutdown: no checkpoint, nothing
        /// kept), deletes the folder, and forgets the cluster. Safe to call again.
        func remove() {
            let removedNow = state.withLock { state in
                if case .removed = state { return false }
                if case .running(let server) = state {
                    _ = try? pgCtl(["-m", "immediate", "-w", "-t", "30", "stop"])
                    reap(server)
                }
                try? FileManager.default.removeItem(at: directory)
                state = .removed
                return true
            }
            if removedNow { PostgresCluster.unregister(self) }
        }

        /// Runs the server, its output appended to the log, and waits until it accepts
        /// connections: its lock file names this port and says "ready", the status pg_ctl
        /// waits for too (it is written once the server accepts connections).
        ///
        /// fsync=off is only for speed: a throwaway cluster's data need not survive a crash
        /// of the machine. Never a setting for a real server. 200 connections: several
        /// servers under test with their pools, and psql beside them.
        private func launch(port: Int) throws -> Process {
            let logged = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
            if logged == 0 { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
            let server = Process()
            PostgresCluster.prepare(server, programs.appendingPathComponent("postgres"),
                                    ["-D", data.path, "-p", String(port), "-k", directory.path, "-c", "listen_addresses=127.0.0.1",
                                     "-c", "fsync=off", "-c", "max_connections=200"],
                                    as: account, in: directory, password: nil)
            let output = try FileHandle(forWritingTo: log)
            defer { try? output.close() }
            output.seekToEndOfFile()
            server.standardInput = FileHandle.nullDevice
            server.standardOutput = output
            server.standardError = output
            try server.run()
            if eventually(timeout: .seconds(30), every: .milliseconds(10), { !server.isRunning || accepts(port: port) }),
               server.isRunning {
                return server
            }
            let running = server.isRunning
            reap(server, grace: .zero)
            let said = (try? Data(contentsOf: log)).map { String(decoding: $0.dropFirst(logged), as: UTF8.self) } ?? ""
            if running { throw ProcessFailure("PostgreSQL did not accept connections within 30 s; log: \(said.suffix(3000))") }
            if said.contains("Address already in use") { throw PortTaken() }
            throw ProcessFailure("PostgreSQL exited (\(server.terminationStatus)) before accepting connections; log: \(said.suffix(3000))")
        }

        /// Whether the server's lock file says it accepts connections on `port`: its lines
        /// are pid, data folder, start time, port, socket folder, address, shared memory key,
        /// status.
        private func accepts(port: Int) -> Bool {
            guard let text = try? String(contentsOf: data.appendingPathComponent("postmaster.pid"), encoding: .utf8) else { return false }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            return lines.count >= 8 && lines[3] == String(port) && lines[7] == "ready"
        }

        /// Waits up to `grace` for the server to exit (pg_ctl has stopped it), then kills its
        /// process group (runuser and the server; the backends, each in a session of its own,
        /// see the server gone and exit) and reaps it.
        private func reap(_ server: Process, grace: Duration = .seconds(10)) {
            ChildProcess.stop(server, grace: grace, terminating: false)
        }

        /// pg_ctl on this cluster, with a deadline past its own `-t 30`, so that pg_ctl says
        /// what it waited for.
        private func pgCtl(_ arguments: [String]) throws -> ProcessOutcome {
            try PostgresCluster.execute(programs.appendingPathComponent("pg_ctl"), ["-D", data.path] + arguments,
                                        as: account, in: directory, timeout: 40)
        }
    }

    /// The server exited because another process has its port.
    private struct PortTaken: Error {}

    private static let clusterUser = "sitefs"
    private static let serverAccountName = "postgres"

    /// The newest installed PostgreSQL's programs: Debian keeps each major version's in
    /// /usr/lib/postgresql/VERSION/bin, off PATH (the psql on PATH is a wrapper).
    private static func programsFolder() throws -> URL {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { version in
            ["initdb", "pg_ctl", "postgres"].allSatisfy { FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/\($0)") }
        }
        // Numerically, so that 10 is newer than 9.6.
        let numbers = { (version: String) in version.split(separator: ".").map { Int($0) ?? 0 } }
        guard let newest = versions.max(by: { numbers($0).lexicographicallyPrecedes(numbers($1)) }) else {
            throw ProcessFailure("PostgreSQL is not installed (apt-get install postgresql): no \(root)/*/bin/pg_ctl")
        }
        return URL(fileURLWithPath: "\(root)/\(newest)/bin")
    }

    /// The account the server runs as when the tests run as root.
    private static func serverAccount() throws -> TestAccount {
        guard let entry = getpwnam(serverAccountName) else {
            throw ProcessFailure("PostgreSQL refuses to run as root, and there is no '\(serverAccountName)' account to run it as (apt-get install postgresql)")
        }
        return TestAccount(name: serverAccountName, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// A new folder /tmp/sitefs-pg-XXXXXX, mode 0700 (mkdtemp), given to `account` if any.
    private static func privateFolder(for account: TestAccount?) throws -> URL {
        var template = Array("/tmp/sitefs-pg-XXXXXX".utf8CString)
        guard let path = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!).map { String(cString: $0) } }) else {
            throw ProcessFailure("cannot make a folder in /tmp: \(String(cString: strerror(errno)))")
        }
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        do {
            try account?.own(directory.path, mode: 0o700)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return directory
    }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }

    private static func executable(_ url: URL) -> URL? {
        FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }

    private static func onPath(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").lazy.compactMap { executable(URL(fileURLWithPath: String($0)).appendingPathComponent(name)) }.first
    }

    // MARK: Child processes

    /// Sets `process` up to run `program` as `account` (through runuser; nil: as this
    /// process) in `directory`. The environment is this process's without its PG* variables
    /// (a PGHOST, PGDATA or PGSERVICE of the machine must not redirect the tests), with a 10 s
    /// limit on connecting (a stopped server fails psql quickly) and PGPASSWORD when given.
    private static func prepare(_ process: Process, _ program: URL, _ arguments: [String], as account: TestAccount?,
                                in directory: URL?, password: String?) {
        if let account {
            // Found when the child starts; runuser is in util-linux, always there.
            process.executableURL = onPath("runuser") ?? URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", account.name, "--", program.path] + arguments
        } else {
            process.executableURL = program
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PG") }
        environment["PGCONNECT_TIMEOUT"] = "10"
        if let password { environment["PGPASSWORD"] = password }
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
    }

    /// Runs `program` (see `prepare`) to its end with the shared runner (`run`), which kills
    /// its process group (runuser's child too) past `timeout`.
    fileprivate static func execute(_ program: URL, _ arguments: [String], as account: TestAccount? = nil, in directory: URL? = nil,
                                    password: String? = nil, timeout: TimeInterval = 30) throws -> ProcessOutcome {
        let process = Process()
        prepare(process, program, arguments, as: account, in: directory, password: password)
        return try run(process.executableURL!, process.arguments ?? [], timeout: timeout, environment: process.environment,
                       inheritEnvironment: false, directory: directory)
    }
}

/// A database of one test's in a `PostgresCluster`: what a server under test is given. It
/// keeps its cluster alive while it exists.
public struct PostgresTestDatabase: Sendable {
    public let name: String
    /// `postgres://USER@HOST:PORT/NAME`: no password in it (see `environment`).
    public let url: String
    /// What a child process needs besides the URL to reach it: `["PGPASSWORD": password]`.
    public let environment: [String: String]
    public let cluster: PostgresCluster

    fileprivate init(name: String, cluster: PostgresCluster) {
        self.name = name
        self.cluster = cluster
        let user = cluster.user.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? cluster.user
        let host = cluster.host.contains(":") ? "[\(cluster.host)]" : cluster.host
        url = "postgres://\(user)@\(host):\(cluster.port)/\(name)"
        environment = ["PGPASSWORD": cluster.password]
    }

    /// Runs `sql` in this database (see `PostgresCluster.psql`).
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        try cluster.psql(sql, database: name)
    }

    /// Drops the database, ending the connections still open to it (a server under test may
    /// keep a pool open). Dropping it again does nothing.
    public func drop() throws {
        try cluster.psql("DROP DATABASE IF EXISTS \"\(name)\" WITH (FORCE)")
    }
}
