import Foundation
import Logging
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

/// The indexing worker's promises: jobs survive a restart, a job of a worker that died is
/// taken up once its lease is over, and instances sharing one PostgreSQL never claim the
/// same job. The first two on SQLite, and with `SITEFS_TEST_STORE=postgres` on PostgreSQL.
@Suite struct SearchIndexerTests {
    static let admin = Caller.administrator("admin")

    @Test func queuedJobsSurviveARestart() async throws {
        let first = try TestEnvironment()
        let site = try await first.storage.documents.createSite(named: "Harbour", by: Self.admin)
        _ = try await first.storage.documents.createFile(named: "notes.txt", in: site.id, bytes: Array("quay".utf8), by: Self.admin)
        first.storage.close()
        let second = try TestEnvironment(directory: first.directory)
        defer { second.remove() }
        #expect(try await second.storage.documents.searchIndexStatus().pending == 1)
        #expect(try await second.storage.searchIndexer.waitUntilIndexed())
        #expect(try await second.storage.documents.search(try SearchQuery(q: "quay"), for: Self.admin).results.count == 1)
    }

    @Test func aDeadWorkersJobIsTakenUpWhenItsLeaseEnds() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        let site = try await env.storage.documents.createSite(named: "Harbour", by: Self.admin)
        _ = try await env.storage.documents.createFile(named: "notes.txt", in: site.id, bytes: Array("quay".utf8), by: Self.admin)
        let engine = env.storage.metadata.database.engine
        let now = Timestamp.now().microseconds
        let dead = try await env.storage.metadata.write { db in try SearchJobs.claim(db, engine: engine, at: now) }
        #expect(dead.count == 1)
        // Held by the worker that "died": nobody else takes it during the lease...
        let during = try await env.storage.metadata.write { db in try SearchJobs.claim(db, engine: engine, at: now + 1) }
        #expect(during.isEmpty)
        // ...and someone does after it.
        let after = try await env.storage.metadata.write { db in
            try SearchJobs.claim(db, engine: engine, at: now + SearchJobs.lease + 1)
        }
        #expect(after.map(\.itemID) == dead.map(\.itemID))
        #expect(after.first?.attempts == 2)
    }

    /// Two instances on one database claiming at once: every job goes to exactly one.
    @Test(.enabled(if: PostgresCluster.isAvailable)) func instancesOnOnePostgresNeverClaimTheSameJob() async throws {
        let database = try PostgresCluster.shared().createDatabase()
        defer { try? database.drop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-idx-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let configuration = ServerConfiguration(dataDirectory: folder, database: database.location, databaseConnections: 2)
        let one = try ServerStorage(configuration: configuration)
        let two = try ServerStorage(configuration: configuration)
        defer { one.close(); two.close() }
        let site = try await one.documents.createSite(named: "Harbour", by: Self.admin)
        for index in 0..<40 {
            _ = try await one.documents.createFile(named: "f\(index).txt", in: site.id, bytes: Array("word\(index)".utf8), by: Self.admin)
        }
        let now = Timestamp.now().microseconds
        let claims = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for storage in [one, two, one, two, one, two, one, two, one, two] {
                group.addTask {
                    try await storage.metadata.write { db in try SearchJobs.claim(db, engine: .postgres, at: now) }.map(\.itemID)
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(claims.count == 40)
        #expect(Set(claims).count == 40)
        // Both workers then finish (the leases are theirs; handing back lets them run now).
        try await one.metadata.write { db in try db.execute(sql: "UPDATE search_jobs SET claimed_until = 0") }
        async let first = one.searchIndexer.waitUntilIndexed()
        async let second = two.searchIndexer.waitUntilIndexed()
        let (firstIdle, secondIdle) = try await (first, second)
        #expect(firstIdle && secondIdle)
        #expect(try await one.documents.searchIndexStatus() == SearchIndexStatus(pending: 0, indexed: 40, failed: 0))
        #expect(try await two.documents.search(try SearchQuery(q: "word3"), for: Self.admin).results.map(\.item.name).sorted()
                == ["f3.txt", "f30.txt", "f31.txt", "f32.txt", "f33.txt", "f34.txt", "f35.txt", "f36.txt", "f37.txt", "f38.txt", "f39.txt"])
    }
}
