import Foundation
import SitefsTestSupport
import Testing

/// The test kit's PostgreSQL (`PostgresCluster`), which the PostgreSQL store's tests stand
/// on: databases made and dropped in the shared cluster, and a private cluster stopped and
/// started again under its clients. Checked through psql the way a server under test gets
/// there: the database's URL, and the password in the environment.
struct PostgresClusterTests {
    @Test func theSharedClusterMakesDatabasesAndDropsThem() throws {
        let cluster = try PostgresCluster.shared()
        let first = try cluster.createDatabase()
        let second = try cluster.createDatabase()
        defer { try? first.drop(); try? second.drop() }
        #expect(first.name != second.name)
        #expect(first.url == "postgres://\(cluster.user)@\(cluster.host):\(cluster.port)/\(first.name)")
        #expect(first.environment == ["PGPASSWORD": cluster.password])
        #expect(!first.url.contains(cluster.password))

        var names = try databaseNames(through: second)
        #expect(names.contains(first.name))
        #expect(names.contains(second.name))
        #expect(try psql(first, "SELECT current_database(), current_user").out == "\(first.name)|\(cluster.user)\n")

        try first.drop()
        names = try databaseNames(through: second)
        #expect(!names.contains(first.name))
        #expect(names.contains(second.name))
        #expect(try psql(first, "SELECT 1").status != 0, "connected to a dropped database")
    }

    @Test func aPrivateClusterStopsAndStartsAgainOnItsPort() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.remove() }
        let database = try cluster.createDatabase()
        #expect(try psql(database, "CREATE TABLE kept (value integer); INSERT INTO kept VALUES (42)").status == 0)

        try cluster.stop()
        let refused = try psql(database, "SELECT 1")
        #expect(refused.status != 0)
        #expect(refused.err.contains("Connection refused"), "psql said: \(refused.err)")

        try cluster.startAgain()
        let again = try psql(database, "SELECT value FROM kept")
        #expect(again.status == 0, "psql said: \(again.err)")
        #expect(again.out == "42\n")

        cluster.remove()
        #expect(try psql(database, "SELECT 1").status != 0, "connected to a removed cluster")
        cluster.remove()
    }

    /// The databases of `database`'s cluster, asked in `database`.
    private func databaseNames(through database: PostgresTestDatabase) throws -> [String] {
        let answer = try psql(database, "SELECT datname FROM pg_database")
        try #require(answer.status == 0, "psql said: \(answer.err)")
        return answer.out.split(separator: "\n").map(String.init)
    }

    /// psql on `database.url`, with `database.environment`: rows unaligned, no headers.
    private func psql(_ database: PostgresTestDatabase, _ sql: String) throws -> (status: Int32, out: String, err: String) {
        try run(URL(fileURLWithPath: "/usr/bin/env"), ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", database.url, "-c", sql],
                timeout: 30, environment: database.environment.merging(["PGCONNECT_TIMEOUT": "10"]) { $1 })
    }
}
