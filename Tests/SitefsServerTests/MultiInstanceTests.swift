import Foundation
import SitefsAPI
import SitefsTestSupport
import Synchronization
import Testing
@testable import SitefsServerCore

/// Several `sitefs-server` processes on one PostgreSQL database and one blob folder, as an
/// operator runs them, used through HTTP the way clients use them.
@Suite(.serialized) struct MultiInstanceTests {
    /// A database and blob folder, set up by the admin commands, and servers on them.
    final class Deployment: @unchecked Sendable {
        let database: PostgresTestDatabase
        let folder: URL
        let blobs: URL
        private(set) var servers: [ServerProcess] = []

        init(cluster: PostgresCluster? = nil) throws {
            database = try (cluster ?? PostgresCluster.shared()).createDatabase()
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-multi-\(UUID().uuidString.prefix(8))")
            blobs = folder.appendingPathComponent("blobs")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try admin(["migrate"])
            try admin(["user", "add", "anna"], stdin: "secret\n")
            try admin(["site", "add", "Harbour"])
            try admin(["grant", "anna", "Harbour"])
        }

        deinit {
            for server in servers { server.stop() }
            try? database.drop()
            try? FileManager.default.removeItem(at: folder)
        }

        var storageArguments: [String] { ["--database", database.url, "--blobs", blobs.path] }

        @discardableResult
        func admin(_ arguments: [String], stdin: String? = nil) throws -> String {
            let result = try run(ServerProcess.executable, arguments + storageArguments, stdin: stdin, environment: database.environment)
            guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
            return result.out
        }

        func startServer() throws -> ServerProcess {
            let server = try ServerProcess(storage: storageArguments, environment: database.environment, logFolder: folder)
            servers.append(server)
            return server
        }

        /// The same storage in this process (what a third instance would see).
        func storage() throws -> ServerStorage {
            let location = database.location
            return try ServerStorage(configuration: ServerConfiguration(dataDirectory: blobs, database: location, databaseConnections: 1))
        }
    }

    private static func signIn(_ server: ServerProcess) throws -> Curl {
        var client = Curl(baseURL: server.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"secret"}"#)
        try #require(session.status == 201, "sign-in: \(session.body)")
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        return client
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ response: (status: Int, body: String)) throws -> T {
        try JSONDecoder().decode(type, from: Data(response.body.utf8))
    }

    private static func upload(_ client: Curl, _ id: String, text: String, ifMatch etag: String) throws -> (status: Int, body: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("body-\(UUID().uuidString)")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try client.call("PUT", "/v1/items/\(id)/content", extra: ["-H", "If-Match: \"\(etag)\"", "--data-binary", "@\(file.path)"])
    }

    @Test func aSessionMadeOnOneInstanceWorksOnTheOther() throws {
        let deployment = try Deployment()
        let first = try deployment.startServer(), second = try deployment.startServer()
        let onFirst = try Self.signIn(first)
        let onSecond = Curl(baseURL: second.baseURL, token: onFirst.token)
        let sites = try Self.decode(ItemPage.self, try onSecond.call("GET", "/v1/sites"))
        #expect(sites.items.map(\.name) == ["Harbour"])
        let folder = try Self.decode(Item.self, try onFirst.call("POST", "/v1/items/\(sites.items[0].id)/children",
                                                              json: #"{"name":"Plans","kind":"folder"}"#))
        #expect(try Self.decode(Item.self, try onSecond.call("GET", "/v1/items/\(folder.id)")).name == "Plans")
        // Signing out on one instance ends the session on both.
        #expect(try onSecond.call("DELETE", "/v1/session").status == 204)
        #expect(try onFirst.call("GET", "/v1/sites").status == 401)
    }

    /// Every round, two saves based on the same version race through two instances: one
    /// wins and one gets 412, never both (the in-process `PostgresStoreTests` order the race
    /// with a hook; this is the same through real servers and HTTP).
    @Test func concurrentConditionalSavesThroughTwoInstancesHaveOneWinnerEveryRound() throws {
        let deployment = try Deployment()
        let servers = [try deployment.startServer(), try deployment.startServer()]
        let clients = try servers.map(Self.signIn)
        let site = try Self.decode(ItemPage.self, try clients[0].call("GET", "/v1/sites")).items[0]
        var file = try Self.decode(Item.self, try clients[0].call("POST", "/v1/items/\(site.id)/children?name=plan.txt",
                                                                 extra: ["--data-binary", "v0"]))
        for round in 1...10 {
            let statuses = Mutex<[Int]>([])
            let base = file.etag, id = file.id
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let status = (try? Self.upload(clients[index], id, text: "round \(round) via \(index)", ifMatch: base).status) ?? -1
                statuses.withLock { $0.append(status) }
            }
            #expect(statuses.withLock { $0.sorted() } == [200, 412], "round \(round)")
            file = try Self.decode(Item.self, try clients[1].call("GET", "/v1/items/\(file.id)"))
            #expect(file.etag != base)
        }
        let versions = try Self.decode(VersionList.self, try clients[0].call("GET", "/v1/items/\(file.id)/versions"))
        #expect(versions.versions.count == 11)
    }

    /// Two writers on two instances and a reader that takes each page of the change feed
    /// from the other instance than the last: every change arrives once, none is missed.
    @Test func aClientSwitchingInstancesNeitherMissesNorRepeatsAChange() throws {
        let deployment = try Deployment()
        let servers = [try deployment.startServer(), try deployment.startServer()]
        let clients = try servers.map(Self.signIn)
        let site = try Self.decode(ItemPage.self, try clients[0].call("GET", "/v1/sites")).items[0]
        var cursor = try Self.decode(ChangePage.self, try clients[1].call("GET", "/v1/changes")).nextCursor
        let perWriter = 15
        let writers = DispatchGroup()
        for writer in 0..<2 {
            DispatchQueue.global().async(group: writers) {
                for index in 0..<perWriter {
                    _ = try? clients[writer].call("POST", "/v1/items/\(site.id)/children",
                                                  json: #"{"name":"w\#(writer)-\#(index)","kind":"folder"}"#)
                }
            }
        }
        var seen: [String] = []
        var reads = 0
        let complete = try eventually(timeout: .seconds(60), every: .milliseconds(20)) {
            let page = try Self.decode(ChangePage.self, try clients[reads % 2].call("GET", "/v1/changes?cursor=\(cursor)"))
            reads += 1
            cursor = page.nextCursor
            for case .item(let item) in page.changes { seen.append(item.name) }
            return seen.count >= 2 * perWriter
        }
        #expect(writers.wait(timeout: .now() + 60) == .success)
        #expect(complete, "saw \(seen.count) of \(2 * perWriter) changes")
        #expect(seen.count == Set(seen).count, "a change came twice: \(seen)")
        #expect(Set(seen) == Set((0..<2).flatMap { writer in (0..<perWriter).map { "w\(writer)-\($0)" } }))
        #expect(reads > 2)
    }

    /// An instance killed while a save streams into it: nothing of that save is visible, the
    /// client's retry through another instance completes it, and the half-written staging
    /// file is collected once it has been abandoned long enough.
    @Test func anUploadCutByAKilledInstanceIsFinishedThroughAnother() async throws {
        let deployment = try Deployment()
        let first = try deployment.startServer(), second = try deployment.startServer()
        let onFirst = try Self.signIn(first)
        let onSecond = Curl(baseURL: second.baseURL, token: onFirst.token)
        let site = try Self.decode(ItemPage.self, try onFirst.call("GET", "/v1/sites")).items[0]
        let file = try Self.decode(Item.self, try onFirst.call("POST", "/v1/items/\(site.id)/children?name=drawing.pdf",
                                                              extra: ["--data-binary", "original"]))
        let big = deployment.folder.appendingPathComponent("big")
        try Data(repeating: 0x42, count: 4 << 20).write(to: big)
        let staging = deployment.blobs.appendingPathComponent("tmp")
        let cut = Thread { _ = try? onFirst.call("PUT", "/v1/items/\(file.id)/content",
                                                 extra: ["-H", "If-Match: \"\(file.etag)\"", "--limit-rate", "256K",
                                                         "--data-binary", "@\(big.path)"]) }
        cut.start()
        let staged = await eventually(timeout: .seconds(20)) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? []
            return names.contains { name in
                ((try? FileManager.default.attributesOfItem(atPath: staging.appendingPathComponent(name).path)[.size] as? Int) ?? 0) > 0
            }
        }
        try #require(staged, "the upload never reached the staging folder")
        kill(first.process.processIdentifier, SIGKILL)
        first.process.waitUntilExit()

        let unchanged = try Self.decode(Item.self, try onSecond.call("GET", "/v1/items/\(file.id)"))
        #expect(unchanged.etag == file.etag)
        #expect(try onSecond.call("GET", "/v1/items/\(file.id)/content").body == "original")
        let retried = try onSecond.call("PUT", "/v1/items/\(file.id)/content",
                                        extra: ["-H", "If-Match: \"\(file.etag)\"", "--data-binary", "@\(big.path)"])
        #expect(retried.status == 200)
        #expect(try Self.decode(Item.self, try onSecond.call("GET", "/v1/items/\(file.id)")).size == 4 << 20)

        let storage = try deployment.storage()
        defer { storage.close() }
        let collected = try await storage.collectUnreferencedBlobs(now: Date().addingTimeInterval(2 * 3600))
        #expect(collected.removed == 0, "every blob is a committed version's")
        #expect(collected.kept == 2, "the original and the retried save")
        #expect((try FileManager.default.contentsOfDirectory(atPath: staging.path)).isEmpty, "the cut upload's staging file stayed")
    }

    /// PostgreSQL stopping under running instances: requests get 503 with Retry-After (which
    /// clients honour), and once it is back the same instances answer again by themselves.
    @Test func postgreSQLRestartingGives503AndTheInstancesRecover() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.remove() }
        let deployment = try Deployment(cluster: cluster)
        let first = try deployment.startServer(), second = try deployment.startServer()
        let onFirst = try Self.signIn(first)
        let onSecond = Curl(baseURL: second.baseURL, token: onFirst.token)
        let site = try Self.decode(ItemPage.self, try onFirst.call("GET", "/v1/sites")).items[0]

        try cluster.stop()
        for client in [onFirst, onSecond] {
            let refused = try client.call("GET", "/v1/sites", extra: ["-i"])
            #expect(refused.status == 503)
            #expect(refused.body.lowercased().contains("retry-after: 2"))
        }
        try cluster.startAgain()
        for client in [onFirst, onSecond] {
            #expect(eventually(timeout: .seconds(20)) { (try? client.call("GET", "/v1/sites").status) == 200 })
        }
        let made = try onSecond.call("POST", "/v1/items/\(site.id)/children", json: #"{"name":"after","kind":"folder"}"#)
        #expect(made.status == 201)
        let listed = try Self.decode(ItemPage.self, try onFirst.call("GET", "/v1/items/\(site.id)/children"))
        #expect(listed.items.map(\.name) == ["after"])
    }

    /// PostgreSQL killed (`-m immediate`) under load, then the instance told to stop: it
    /// answers 503 meanwhile and exits cleanly at once. (Statements in flight at the kill once
    /// never completed: a worker blocked for good, and SIGTERM could not end the server.)
    @Test func anInstanceStopsPromptlyAfterPostgreSQLDiesUnderLoad() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.remove() }
        let deployment = try Deployment(cluster: cluster)
        let server = try deployment.startServer()
        let client = try Self.signIn(server)
        // One curl, 16 requests at a time, thousands in all.
        let config = deployment.folder.appendingPathComponent("load.curl")
        var lines = ["header = \"Authorization: Bearer \(client.token!)\"", "silent", "output = /dev/null"]
        for _ in 0..<20_000 { lines.append("url = \"\(server.baseURL)/v1/sites\"") }
        try lines.joined(separator: "\n").write(to: config, atomically: true, encoding: .utf8)
        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        load.arguments = ["--parallel", "--parallel-max", "16", "--max-time", "5", "-K", config.path]
        load.standardOutput = FileHandle.nullDevice
        load.standardError = FileHandle.nullDevice
        try load.run()
        defer {
            if load.isRunning { load.terminate() }
            load.waitUntilExit()
        }
        #expect(eventually(timeout: .seconds(20)) { server.log.components(separatedBy: "GET /v1/sites 200").count > 200 })

        cluster.remove()
        #expect(eventually(timeout: .seconds(20)) { server.log.contains("GET /v1/sites 503") })
        let status = server.stop()
        #expect(server.process.terminationReason == .exit && status == 0, "the server had to be killed")
    }
}
