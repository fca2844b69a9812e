import Foundation
import GRDB
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

/// A database at schema v3 (before modes and links) opened by this server becomes v4 and
/// keeps everything: items, their ids, versions, locks, and the ids already handed out
/// (a deleted item's id is never reused). On SQLite, and with `SITEFS_TEST_STORE=postgres`
/// on PostgreSQL.
@Suite struct SchemaV4MigrationTests {
    static let admin = Caller.administrator("admin")

    /// Rows as a v3 server would have left them (the same SQL on both engines): a site, a
    /// file with a version and a live lock, and item 5 made and deleted.
    static let seed = [
        """
        INSERT INTO items (id, site_id, parent_id, name, kind, size, created_at, modified_at, created_by, modified_by, etag, blob, list_seq)
        VALUES (1, 1, NULL, 'Harbour', 'site', 0, 1, 1, 'admin', 'admin', 'e1', NULL, 1),
               (2, 1, 1, 'plan.odt', 'file', 2, 2, 2, 'anna', 'anna', 'e2', 'b2', 2),
               (5, 1, 1, 'gone', 'folder', 0, 3, 3, 'anna', 'anna', 'e5', NULL, 3)
        """,
        "INSERT INTO versions (item_id, etag, size, blob, modified_at, modified_by) VALUES (2, 'e2', 2, 'b2', 2, 'anna')",
        """
        INSERT INTO locks (item_id, lock_id, token_hash, holder_user_id, holder, holder_name, device, application, created_at, expires_at)
        VALUES (2, 'L1', 'h', NULL, 'anna', 'Anna Berger', 'laptop', 'LibreOffice', 1, 9000000000000000)
        """,
        "DELETE FROM items WHERE id = 5",
    ]

    @Test func aV3DatabaseBecomesV4KeepingItsData() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-v3-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var postgres: PostgresTestDatabase?
        if TestEnvironment.onPostgres {
            let database = try PostgresCluster.shared().createDatabase()
            postgres = database
            try database.psql("CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)")
            for migration in PostgresSchema.migrations where ["v1", "v3"].contains(migration.version) {
                for statement in migration.statements { _ = try database.psql(statement) }
                _ = try database.psql("INSERT INTO schema_migrations VALUES ('\(migration.version)', 0)")
            }
            for statement in Self.seed { _ = try database.psql(statement) }
            _ = try database.psql("SELECT setval('items_id_seq', 5)")
        } else {
            let queue = try DatabaseQueue(path: folder.appendingPathComponent("metadata.sqlite").path)
            try SQLiteSchema.migrator.migrate(queue, upTo: "v3")
            try await queue.write { db in for statement in Self.seed { try db.execute(sql: statement) } }
            try queue.close()
        }
        defer { try? postgres?.drop() }

        let storage = try ServerStorage(configuration: ServerConfiguration(
            dataDirectory: folder, database: postgres?.location, databaseConnections: 1))
        defer { storage.close() }
        let documents = storage.documents
        let site = try #require(try await documents.site(named: "Harbour"))
        let children = try await documents.children(of: site.id, cursor: nil, limit: 10, for: Self.admin).items
        #expect(children.map(\.name) == ["plan.odt"])
        let file = try #require(children.first)
        #expect(file.kind == .file && file.etag == "e2" && file.size == 2 && file.mode == nil && file.symlinkTarget == nil)
        #expect(file.lock?.holderName == "Anna Berger")
        #expect(try await documents.versions(of: file.id, for: Self.admin).map(\.etag) == ["e2"])

        // The new columns and kind work, and ids continue after the highest ever given.
        let link = try await documents.createSymlink(named: "current", in: site.id, target: "plan.odt", by: Self.admin)
        #expect(try #require(documents.ids.rowID(for: link.id)) > 5)
        let chmod = try await documents.update(file.id, with: ItemPatch(mode: 0o600), condition: nil, by: Self.admin)
        #expect(chmod.mode == 0o600 && chmod.etag == "e2")
    }
}
