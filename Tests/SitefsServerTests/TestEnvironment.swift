import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import SitefsAPI
import SitefsTestSupport
@testable import SitefsServerCore

/// A server data directory in a temp folder, with helpers to set up users, sites and
/// grants directly, and the HTTP application over it. Password hashing uses few rounds so
/// that sign-in is quick in tests; the format and code path are the production ones.
///
/// The metadata is in SQLite in that folder, or with `SITEFS_TEST_STORE=postgres` in a
/// fresh database of the test PostgreSQL cluster (`scripts/test` runs this suite both ways:
/// one store protocol, two engines, no behaviour that differs).
struct TestEnvironment: Sendable {
    let directory: URL
    let configuration: ServerConfiguration
    let storage: ServerStorage
    /// The PostgreSQL database, when the tests run on PostgreSQL.
    let postgres: PostgresTestDatabase?

    /// Whether this run's server tests use PostgreSQL.
    static var onPostgres: Bool { ProcessInfo.processInfo.environment["SITEFS_TEST_STORE"] == "postgres" }

    /// The database made for each data folder, so an environment reopened on a folder (a
    /// restart) finds the same metadata. Lock order: a leaf.
    private static let databases = Mutex<[String: PostgresTestDatabase]>([:])

    init(tokenLifetimeSeconds: Int64 = 3600, maximumUploadBytes: Int64 = 1 << 30, directory: URL? = nil,
         connectionTimeout: Duration = .seconds(60), now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) throws {
        let directory = directory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("sitefs-server-tests-\(UUID().uuidString)", isDirectory: true)
        self.directory = directory
        var location: PostgresLocation?
        if Self.onPostgres {
            let database = try Self.databases.withLock { made in
                if let existing = made[directory.path] { return existing }
                let fresh = try PostgresCluster.shared().createDatabase()
                made[directory.path] = fresh
                return fresh
            }
            postgres = database
            location = database.location
        } else {
            postgres = nil
        }
        configuration = ServerConfiguration(
            dataDirectory: directory, database: location, databaseConnections: 2, host: "127.0.0.1", port: 0,
            tokenLifetimeSeconds: tokenLifetimeSeconds, maximumUploadBytes: maximumUploadBytes, passwordIterations: 1_000,
            connectionTimeout: connectionTimeout, now: now)
        storage = try ServerStorage(configuration: configuration)
    }

    var application: some ApplicationProtocol {
        var logger = Logger(label: "sitefs-server-test")
        logger.logLevel = .warning
        // Plain HTTP: nothing to load, nothing that can throw.
        return try! DocumentServer.application(storage: storage, configuration: configuration, logger: logger)
    }

    /// Runs `body` against the in-process router, then removes the data directory.
    func withRouter<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        defer { remove() }
        return try await application.test(.router, body)
    }

    /// Runs `body` against a live server on 127.0.0.1 and a free port, through a client
    /// that runs concurrent requests on concurrent connections.
    func withLiveServer<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await application.test(.ahc(.http), body)
    }

    /// Closes the storage and removes the data folder (and the PostgreSQL database).
    func remove() {
        storage.close()
        if let postgres, Self.databases.withLock({ $0.removeValue(forKey: directory.path) }) != nil {
            try? postgres.drop()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Setup shortcuts (administrator side, not through HTTP)

    @discardableResult
    func user(_ name: String, password: String = "secret") async throws -> String {
        try await storage.accounts.addUser(named: name, password: password)
        return name
    }

    @discardableResult
    func site(_ name: String, grantedTo users: [String] = [], readOnly: Bool = false) async throws -> Item {
        let site = try await storage.documents.createSite(named: name, by: .administrator("admin"))
        for user in users {
            try await storage.accounts.grant(user: user, site: name, readOnly: readOnly)
        }
        return site
    }
}

/// A wall clock that stands still until a test moves it, for what expires on the server.
final class ManualWallClock: Sendable {
    private let time = Mutex(Timestamp.now())
    var now: Timestamp { time.withLock { $0 } }
    func advance(by seconds: Double) {
        time.withLock { $0 = Timestamp(microsecondsSinceEpoch: $0.microseconds + Int64(seconds * 1_000_000)) }
    }
}

extension PostgresTestDatabase {
    /// Where the server under test finds this database (the test cluster's password given
    /// directly: no environment or .pgpass to read in-process).
    var location: PostgresLocation {
        PostgresLocation(endpoint: .tcp(host: cluster.host, port: cluster.port), user: cluster.user,
                         database: name, password: cluster.password, tls: .disable)
    }
}
