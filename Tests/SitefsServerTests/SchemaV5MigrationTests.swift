import Foundation
import GRDB
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

/// A database at schema v4 (before search) opened by this server becomes v5: every name is
/// folded in the migration, so name search finds old items at once, and every current file
/// is queued, so its text is found once the worker has run. On SQLite, and with
/// `SITEFS_TEST_STORE=postgres` on PostgreSQL.
@Suite struct SchemaV5MigrationTests {
    static let admin = Caller.administrator("admin")

    /// Rows as a v4 server would have left them (the same SQL on both engines).
    static let seed = [
        """
        INSERT INTO items (id, site_id, parent_id, name, kind, size, created_at, modified_at, created_by, modified_by, etag, blob, list_seq)
        VALUES (1, 1, NULL, 'Harbour', 'site', 0, 1, 1, 'admin', 'admin', 'e1', NULL, 1),
               (2, 1, 1, 'Pla\u{0308}n Ö.txt', 'file', 17, 2, 2, 'anna', 'anna', 'e2', 'bb2', 2),
               (3, 1, 1, 'Docs', 'folder', 0, 3, 3, 'anna', 'anna', 'e3', NULL, 3)
        """,
        "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (2, 'e2', 17, 'bb2', 2, 'anna')",
    ]

    @Test func aV4DatabaseBecomesV5WithNamesFoldedAndFilesQueued() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-v4-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("blobs/bb"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("lighthouse keeper".utf8).write(to: folder.appendingPathComponent("blobs/bb/bb2"))
        var postgres: PostgresTestDatabase?
        if TestEnvironment.onPostgres {
            let database = try PostgresCluster.shared().createDatabase()
            postgres = database
            try database.psql("CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)")
            for migration in PostgresSchema.migrations.prefix(while: { $0.version != "v5" }) {
                for statement in migration.statements { _ = try database.psql(statement) }
                _ = try database.psql("INSERT INTO schema_migrations VALUES ('\(migration.version)', 0)")
            }
            for statement in Self.seed { _ = try database.psql(statement) }
            _ = try database.psql("SELECT setval('items_id_seq', 3)")
        } else {
            let queue = try DatabaseQueue(path: folder.appendingPathComponent("metadata.sqlite").path)
            try SQLiteSchema.migrator.migrate(queue, upTo: "v4")
            try await queue.write { db in for statement in Self.seed { try db.execute(sql: statement) } }
            try queue.close()
        }
        defer { try? postgres?.drop() }

        let storage = try ServerStorage(configuration: ServerConfiguration(
            dataDirectory: folder, database: postgres?.location, databaseConnections: 1))
        defer { storage.close() }
        let documents = storage.documents
        // Names at once, before any text is read.
        let byName = try await documents.search(try SearchQuery(q: "plan o"), for: Self.admin)
        #expect(byName.results.map(\.item.name) == ["Pla\u{0308}n Ö.txt"])
        #expect(try await documents.searchIndexStatus() == SearchIndexStatus(pending: 1, indexed: 0, failed: 0))
        #expect(try await documents.search(try SearchQuery(q: "lighthouse"), for: Self.admin).results.isEmpty)
        #expect(try await storage.searchIndexer.waitUntilIndexed())
        let byText = try await documents.search(try SearchQuery(q: "lighthouse"), for: Self.admin)
        #expect(byText.results.map(\.item.name) == ["Pla\u{0308}n Ö.txt"])
        #expect(byText.results.first?.snippet == "lighthouse keeper")
        #expect(try await documents.searchIndexStatus() == SearchIndexStatus(pending: 0, indexed: 1, failed: 0))
        // New items get their folded names as they are made.
        _ = try await documents.createFolder(named: "Ärchive", in: try #require(try await documents.site(named: "Harbour")).id, by: Self.admin)
        #expect(try await documents.search(try SearchQuery(q: "ARCHIVE"), for: Self.admin).results.map(\.item.name) == ["Ärchive"])
    }
}
