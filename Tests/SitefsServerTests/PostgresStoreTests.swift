import Foundation
import Logging
import NIOCore
import SitefsAPI
import SitefsTestSupport
import Synchronization
import Testing
@testable import SitefsServerCore

/// The PostgreSQL store as several instances use it: two storages in this process on one
/// database and one blob folder stand for two servers. Races are ordered by a hook that
/// holds one instance's write open just before its commit (`PostgresSession.Hooks`), so
/// each test shows what the other instance does meanwhile, every run.
@Suite(.serialized) struct PostgresStoreTests {
    /// Two instances' storages over one fresh database, the first with a hook it can arm.
    final class Instances: @unchecked Sendable {
        let database: PostgresTestDatabase
        let folder: URL
        let first: ServerStorage
        let second: ServerStorage
        let gate = CommitGate()

        init() throws {
            database = try PostgresCluster.shared().createDatabase()
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-pg-\(UUID().uuidString.prefix(8))")
            let location = database.location
            let configuration = ServerConfiguration(dataDirectory: folder, database: location, passwordIterations: 1_000)
            let gate = self.gate
            var logger = Logger(label: "postgres-store-test")
            logger.logLevel = .error
            first = try ServerStorage(configuration: configuration, database: PostgresMetadataDatabase(
                location: location, connections: 2, hooks: .init(beforeCommit: { gate.pass() }), logger: logger))
            second = try ServerStorage(configuration: configuration, database: PostgresMetadataDatabase(
                location: location, connections: 2, logger: logger))
        }

        deinit {
            first.close()
            second.close()
            try? database.drop()
            try? FileManager.default.removeItem(at: folder)
        }

        /// Whether some transaction waits for a lock another holds (the second instance's
        /// write waiting behind the first's).
        func someoneWaitsForALock() throws -> Bool {
            try database.psql("SELECT count(*) FROM pg_locks WHERE NOT granted").trimmingCharacters(in: .whitespacesAndNewlines) != "0"
        }
    }

    /// Holds the first write that passes once armed until released.
    final class CommitGate: Sendable {
        private struct State {
            var armed = false
            var holding = false
        }
        /// Lock order: a leaf.
        private let state = Mutex(State())
        private let released = DispatchSemaphore(value: 0)

        func arm() { state.withLock { $0.armed = true } }
        var isHolding: Bool { state.withLock { $0.holding } }
        func release() { released.signal() }

        func pass() {
            let hold = state.withLock { state -> Bool in
                guard state.armed else { return false }
                state.armed = false
                state.holding = true
                return true
            }
            guard hold else { return }
            _ = released.wait(timeout: .now() + 30)
            state.withLock { $0.holding = false }
        }
    }

    static let admin = Caller.administrator("admin")

    private static func body(_ text: String) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            continuation.yield(ByteBuffer(string: text))
            continuation.finish()
        }
    }

    /// Two saves based on one version, through two instances, the first held at its commit
    /// while the second arrives: exactly one wins, the other gets 412 with the winner's item.
    /// (Without the store's write lock the second checked the old etag, wrote behind the
    /// first's row lock and both "won".)
    @Test func ofTwoSavesOnOneVersionThroughTwoInstancesExactlyOneWins() async throws {
        let instances = try Instances()
        let site = try await instances.first.documents.createSite(named: "Harbour", by: Self.admin)
        let file = try await instances.first.documents.createFile(named: "plan.txt", in: site.id, bytes: Array("v0".utf8), by: Self.admin)
        instances.gate.arm()
        let firstSave = Task {
            try await instances.first.documents.replaceContent(of: file.id, body: Self.body("first"), condition: .oneOf([file.etag]), by: Self.admin)
        }
        #expect(await eventually { instances.gate.isHolding })
        let secondSave = Task {
            try await instances.second.documents.replaceContent(of: file.id, body: Self.body("second"), condition: .oneOf([file.etag]), by: Self.admin)
        }
        // The second write is either waiting for the first (as it must) or, were writes not
        // serialised, already done: either way the race has been run before the release.
        let secondDone = Mutex(false)
        Task { _ = try? await secondSave.value; secondDone.withLock { $0 = true } }
        #expect(try await eventually { try instances.someoneWaitsForALock() || secondDone.withLock { $0 } })
        instances.gate.release()
        let winner = try await firstSave.value
        do {
            _ = try await secondSave.value
            Issue.record("the second save, based on the version the first replaced, also won")
        } catch let error as APIError {
            #expect(error.status == .preconditionFailed)
            #expect(error.item?.etag == winner.etag)
        }
        let current = try await instances.second.documents.item(file.id, for: Self.admin)
        #expect(current.etag == winner.etag)
        let versions = try await instances.second.documents.versions(of: file.id, for: Self.admin)
        #expect(versions.count == 2)
    }

    /// A change committed by one instance while another's earlier write is still open: a
    /// client reading the feed between them must not get a cursor past the earlier change,
    /// or it never sees it. Sequence numbers become visible in order on every instance.
    @Test func aFeedReaderNeverSkipsAChangeThatCommitsLater() async throws {
        let instances = try Instances()
        let site = try await instances.first.documents.createSite(named: "Harbour", by: Self.admin)
        try await instances.first.accounts.addUser(named: "anna", password: "secret")
        try await instances.first.accounts.grant(user: "anna", site: "Harbour", readOnly: false)
        let grant = try await instances.second.accounts.signIn(username: "anna", password: "secret")
        let anna = try await instances.second.accounts.caller(forToken: grant.token)
        let start = try await instances.second.documents.changes(since: nil, for: anna).nextCursor

        instances.gate.arm()
        let early = Task { try await instances.first.documents.createFolder(named: "early", in: site.id, by: Self.admin) }
        #expect(await eventually { instances.gate.isHolding })
        let lateDone = Mutex(false)
        let late = Task {
            defer { lateDone.withLock { $0 = true } }
            return try await instances.second.documents.createFolder(named: "late", in: site.id, by: Self.admin)
        }
        #expect(try await eventually { try instances.someoneWaitsForALock() || lateDone.withLock { $0 } })
        // Read while "early" is still uncommitted.
        let between = try await instances.second.documents.changes(since: start, for: anna)
        instances.gate.release()
        _ = try await early.value
        _ = try await late.value
        let after = try await instances.first.documents.changes(since: between.nextCursor, for: anna)
        let seen = (between.changes + after.changes).compactMap { change -> String? in
            if case .item(let item) = change { return item.name } else { return nil }
        }
        #expect(seen == ["early", "late"])
    }

    /// A long-poll on one instance wakes when another instance commits (LISTEN/NOTIFY), long
    /// before its wait is over.
    @Test func aLongPollWakesForAnotherInstancesCommit() async throws {
        let instances = try Instances()
        let site = try await instances.first.documents.createSite(named: "Harbour", by: Self.admin)
        try await instances.first.accounts.addUser(named: "anna", password: "secret")
        try await instances.first.accounts.grant(user: "anna", site: "Harbour", readOnly: false)
        let anna = try await instances.second.accounts.caller(
            forToken: try await instances.second.accounts.signIn(username: "anna", password: "secret").token)
        let start = try await instances.second.documents.changes(since: nil, for: anna).nextCursor
        let began = ContinuousClock.now
        let poll = Task { try await instances.second.documents.changes(since: start, for: anna, waitingUpTo: .seconds(25)) }
        #expect(await eventually { instances.second.metadata.commits.waiting == 1 })
        _ = try await instances.first.documents.createFolder(named: "news", in: site.id, by: Self.admin)
        let page = try await poll.value
        #expect(page.changes.count == 1)
        // Not a timing assertion: the poll would otherwise return this change only when its
        // 25 s were over.
        #expect(ContinuousClock.now - began < .seconds(20))
    }

    /// Two instances starting on an empty database together migrate it once, and agree on
    /// the keys they make on first use (so an id or cursor from one is good on the other).
    @Test func instancesStartingTogetherShareOneSchemaAndOneSetOfKeys() async throws {
        let database = try PostgresCluster.shared().createDatabase()
        defer { try? database.drop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-pg-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let location = database.location
        let configuration = ServerConfiguration(dataDirectory: folder, database: location, databaseConnections: 1)
        let storages = try await withThrowingTaskGroup(of: ServerStorage.self) { group in
            for _ in 0..<4 { group.addTask { try ServerStorage(configuration: configuration) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        defer { for storage in storages { storage.close() } }
        #expect(try database.psql("SELECT count(*) FROM schema_migrations").trimmingCharacters(in: .whitespacesAndNewlines)
                == String(PostgresSchema.migrations.count))
        let site = try await storages[0].documents.createSite(named: "Harbour", by: Self.admin)
        for storage in storages.dropFirst() {
            #expect(try await storage.documents.item(site.id, for: Self.admin).name == "Harbour")
        }
    }
}

extension PostgresStoreTests {
    /// Two instances taking the same lock at once: the first holds its write open before the
    /// commit while the second tries; exactly one lock is taken (201) and the other taker
    /// gets 423 naming the winner.
    @Test func twoInstancesTakingOneLockHaveOneWinner() async throws {
        let instances = try Instances()
        let site = try await instances.first.documents.createSite(named: "Harbour", by: Self.admin)
        let file = try await instances.first.documents.createFile(named: "plan.odt", in: site.id, bytes: Array("v1".utf8), by: Self.admin)
        for name in ["anna", "ben"] {
            try await instances.first.accounts.addUser(named: name, password: "secret")
            try await instances.first.accounts.grant(user: name, site: "Harbour", readOnly: false)
        }
        let anna = try await instances.first.accounts.caller(
            forToken: try await instances.first.accounts.signIn(username: "anna", password: "secret").token)
        let ben = try await instances.second.accounts.caller(
            forToken: try await instances.second.accounts.signIn(username: "ben", password: "secret").token)
        let request = LockRequestBody(device: "d", application: "a", timeout: 60)

        instances.gate.arm()
        let first = Task { try await instances.first.documents.takeLock(on: file.id, request, tokens: .none, by: anna) }
        #expect(await eventually { instances.gate.isHolding })
        let secondDone = Mutex(false)
        let second = Task {
            defer { secondDone.withLock { $0 = true } }
            return try await instances.second.documents.takeLock(on: file.id, request, tokens: .none, by: ben)
        }
        #expect(try await eventually { try instances.someoneWaitsForALock() || secondDone.withLock { $0 } })
        instances.gate.release()
        let winner = try await first.value
        #expect(winner.created && winner.grant.lock.holder == "anna")
        do {
            _ = try await second.value
            Issue.record("the second instance took the lock the first had just taken")
        } catch let error as APIError {
            #expect(error.status.code == 423)
            #expect(error.lock == winner.grant.lock)
        }
        #expect(try await instances.second.documents.item(file.id, for: Self.admin).lock == winner.grant.lock)
        #expect(try database(instances).psql("SELECT count(*) FROM locks").trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    private func database(_ instances: Instances) -> PostgresTestDatabase { instances.database }
}
