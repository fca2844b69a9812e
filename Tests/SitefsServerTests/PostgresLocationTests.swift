import Foundation
import Testing
@testable import SitefsServerCore

/// `--database URL` and where its password comes from: never the URL (argv is public), the
/// password file flag first, then PGPASSWORD, then a private ~/.pgpass, as libpq reads them.
struct PostgresLocationTests {
    private func parse(_ url: String, file: String? = nil, environment: [String: String] = [:], home: String = "/nonexistent") throws
        -> PostgresLocation {
        try PostgresLocation.parse(url, passwordFile: file, environment: environment, homeDirectory: home, currentUser: "osuser")
    }

    private func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pgloc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func aURLNamesHostPortUserDatabaseAndTLS() throws {
        let location = try parse("postgres://sitefs@db.internal:6543/documents?sslmode=require")
        #expect(location.endpoint == .tcp(host: "db.internal", port: 6543))
        #expect(location.user == "sitefs")
        #expect(location.database == "documents")
        #expect(location.tls == .require)
        #expect(location.password == nil)
        #expect(location.description == "postgres://sitefs@db.internal:6543/documents")
    }

    @Test func defaultsFollowLibpq() throws {
        let location = try parse("postgresql:///", environment: ["PGUSER": "anna"])
        #expect(location.endpoint == .socket(path: "/var/run/postgresql/.s.PGSQL.5432"))
        #expect(location.user == "anna")
        #expect(location.database == "anna")
        #expect(location.tls == .prefer)
        let socket = try parse("postgres://sitefs@/docs?host=/run/pg&port=5433")
        #expect(socket.endpoint == .socket(path: "/run/pg/.s.PGSQL.5433"))
        #expect(try parse("postgres://db/docs").user == "osuser")
    }

    @Test func aPasswordInTheURLIsRefusedWithWhereItBelongs() throws {
        #expect {
            try parse("postgres://sitefs:hunter2@db/docs")
        } throws: { error in
            let text = String(describing: error)
            return text.contains("PGPASSWORD") && !text.contains("hunter2")
        }
    }

    @Test func badURLsAreRefusedByName() throws {
        #expect(throws: PostgresLocation.Invalid.self) { try parse("mysql://db/docs") }
        #expect(throws: PostgresLocation.Invalid.self) { try parse("postgres://db:99999/docs") }
        #expect(throws: PostgresLocation.Invalid.self) { try parse("postgres://db/docs?sslmode=sometimes") }
        #expect(throws: PostgresLocation.Invalid.self) { try parse("postgres://db/docs?password=x") }
    }

    @Test func thePasswordFileFlagComesFirstThenPGPASSWORD() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("pw")
        try "from-file\n".write(to: file, atomically: true, encoding: .utf8)
        #expect(try parse("postgres://u@db/d", file: file.path, environment: ["PGPASSWORD": "from-env"]).password == "from-file")
        #expect(try parse("postgres://u@db/d", environment: ["PGPASSWORD": "from-env"]).password == "from-env")
        #expect(throws: PostgresLocation.Invalid.self) { try parse("postgres://u@db/d", file: folder.appendingPathComponent("none").path) }
    }

    @Test func aPrivatePgpassIsReadAndAReadableOneIgnored() throws {
        let home = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: home) }
        let pgpass = home.appendingPathComponent(".pgpass")
        try """
            # comments are skipped
            other:5432:d:u:wrong
            db:5432:d:u:pa\\:ss\\\\word
            localhost:5432:sockets:u:via-socket
            *:*:*:u:fallback
            """.write(to: pgpass, atomically: true, encoding: .utf8)
        chmod(pgpass.path, 0o600)
        #expect(try parse("postgres://u@db/d", home: home.path).password == "pa:ss\\word")
        #expect(try parse("postgres://u@elsewhere:7000/x", home: home.path).password == "fallback")
        #expect(try parse("postgres://u@/sockets", home: home.path).password == "via-socket")
        #expect(try parse("postgres://nobody@db/d", home: home.path).password == nil)
        // PGPASSFILE names another file.
        #expect(try parse("postgres://u@db/d", environment: ["PGPASSFILE": "/nonexistent"], home: home.path).password == nil)
        chmod(pgpass.path, 0o644)
        #expect(try parse("postgres://u@db/d", home: home.path).password == nil)
    }

    @Test func placeholdersAreNumberedOutsideQuotes() {
        #expect(PostgresSession.numberedPlaceholders("SELECT ? , '?' , \"a?\" FROM t WHERE x = ? AND y IN (?, ?)")
                == "SELECT $1 , '?' , \"a?\" FROM t WHERE x = $2 AND y IN ($3, $4)")
    }
}
