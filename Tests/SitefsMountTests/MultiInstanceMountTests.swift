import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Two mounts, each on its own `sitefs-server` instance of one deployment (one PostgreSQL
/// database, one blob folder): what people on two machines behind a load balancer see.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MultiInstanceMountTests {
    /// The deployment and a mount on each of two instances; B long-polls the change feed,
    /// so A's changes reach it as soon as they commit (LISTEN/NOTIFY between instances).
    final class TwoMounts {
        let database: PostgresTestDatabase
        let blobs: URL
        let a: MountFixture
        let b: MountFixture

        /// `lockWriters` false: files open for writing are not locked (another client's save
        /// meanwhile goes through, as on a server without locks).
        init(lockWriters: Bool = true) throws {
            database = try PostgresCluster.shared().createDatabase()
            blobs = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-blobs-\(UUID().uuidString.prefix(8))")
            let locking = lockWriters ? [] : ["--no-lock-writers"]
            a = try MountFixture(extraMountArguments: locking, store: .postgres(database, blobs: blobs, seeding: true))
            b = try MountFixture(extraMountArguments: ["--change-wait", "25", "--poll-interval", "30"] + locking,
                                 store: .postgres(database, blobs: blobs, seeding: false))
        }

        deinit {
            a.tearDown()
            b.tearDown()
            try? database.drop()
            try? FileManager.default.removeItem(at: blobs)
        }
    }

    private static func content(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func mountsOnTwoInstancesSeeEachOthersEdits() throws {
        let mounts = try TwoMounts()
        let (a, b) = (mounts.a, mounts.b)
        #expect(a.server.baseURL != b.server.baseURL)

        // Made on A: B lists and reads it (B polls only every 30 s: its long-poll brings it).
        try "from A\n".write(toFile: a.path("Harbour Tower/minutes.txt"), atomically: false, encoding: .utf8)
        #expect(try a.sitefs(["sync", a.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { Self.content(b.path("Harbour Tower/minutes.txt")) == "from A\n" })

        // Edited in place on B with sed -i (a new file renamed over it): A sees the edit, and
        // the document kept its id and history.
        let before = try #require(try a.serverItem("Harbour Tower/minutes.txt"))
        #expect(try b.shell("sed -i 's/from A/from A and B/' 'Harbour Tower/minutes.txt'").status == 0)
        #expect(try b.sitefs(["sync", b.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { Self.content(a.path("Harbour Tower/minutes.txt")) == "from A and B\n" })
        let after = try #require(try a.serverItem("Harbour Tower/minutes.txt"))
        #expect(after.id == before.id)

        // Folders and renames travel too.
        #expect(try a.shell("mkdir 'Riverside/Plans' && mv 'Harbour Tower/minutes.txt' 'Riverside/Plans/'").status == 0)
        #expect(try a.sitefs(["sync", a.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { Self.content(b.path("Riverside/Plans/minutes.txt")) == "from A and B\n" })
        // (The new path may be found by a lookup at the server before B's feed has moved the
        // old entry away: that follows.)
        #expect(eventually(timeout: .seconds(15)) { !FileManager.default.fileExists(atPath: b.path("Harbour Tower/minutes.txt")) })
    }

    /// The same document saved on both mounts from one version: the first save through
    /// either instance wins, the other is kept as a conflict copy, and both mounts show both.
    @Test func aConflictBetweenTwoInstancesKeepsBothVersionsOnBothMounts() throws {
        let mounts = try TwoMounts(lockWriters: false)
        let (a, b) = (mounts.a, mounts.b)
        try "original".write(toFile: a.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try a.sitefs(["sync", a.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { Self.content(b.path("Riverside/plan.txt")) == "original" })

        // B has it open (based on "original") while A saves "theirs" through the other instance.
        try editWhileOpen(b.path("Riverside/plan.txt"), to: "mine") {
            try "theirs".write(toFile: a.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
            #expect(try a.sitefs(["sync", a.mountpoint.path, "--timeout", "30"]).status == 0)
        }
        #expect(try b.sitefs(["sync", b.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(try a.serverContent("Riverside/plan.txt") == "theirs")
        let site = try #require(try a.serverItem("Riverside"))
        let copy = try #require(try a.children(site.id).first { $0.name.hasPrefix("plan (conflict ") })
        #expect(try a.serverContent("Riverside/\(copy.name)") == "mine")
        for mount in [a, b] {
            #expect(eventually(timeout: .seconds(15)) {
                Self.content(mount.path("Riverside/\(copy.name)")) == "mine" && Self.content(mount.path("Riverside/plan.txt")) == "theirs"
            })
        }
    }

    /// A save streaming into an instance that is killed: the mount's retry goes, through the
    /// load balancer (the fault proxy, switched to the other instance), to the other
    /// instance and completes there. Nothing of the cut attempt shows; no conflict copy.
    @Test func aSaveCutByAKilledInstanceCompletesThroughTheOther() throws {
        let database = try PostgresCluster.shared().createDatabase()
        let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-blobs-\(UUID().uuidString.prefix(8))")
        defer {
            try? database.drop()
            try? FileManager.default.removeItem(at: blobs)
        }
        let fixture = try MountFixture(throughFaultProxy: true, store: .postgres(database, blobs: blobs, seeding: true))
        defer { fixture.tearDown() }
        let other = try ServerProcess(storage: ["--database", database.url, "--blobs", blobs.path],
                                      environment: database.environment, logFolder: fixture.root)
        defer { other.stop() }
        let proxy = try #require(fixture.proxy)

        // 4 MiB whose upload crawls (each 64 KiB of it held back 100 ms) into instance A.
        proxy.mode = .delay(.milliseconds(100))
        let bytes = Data((0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 2654435761 >> 13) })
        try bytes.write(to: URL(fileURLWithPath: fixture.path("Riverside/survey.dwg")))
        let staging = blobs.appendingPathComponent("tmp")
        let streaming = eventually(timeout: .seconds(30)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? []).contains { name in
                ((try? FileManager.default.attributesOfItem(atPath: staging.appendingPathComponent(name).path)[.size] as? Int) ?? 0) > 0
            }
        }
        try #require(streaming, "the upload never reached instance A")
        kill(fixture.server.process.processIdentifier, SIGKILL)
        fixture.server.process.waitUntilExit()
        proxy.upstreamPort = Int(other.baseURL.split(separator: ":").last!)!
        proxy.mode = .pass

        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "90"], timeout: 120).status == 0)
        var viaOther = Curl(baseURL: other.baseURL)
        viaOther.token = fixture.api.token
        let site = try #require(try viaOther.sites().first { $0.name == "Riverside" })
        let children = try viaOther.children(of: site.id)
        #expect(children.map(\.name) == ["survey.dwg"])
        let stored = fixture.root.appendingPathComponent("stored")
        _ = try viaOther.call("GET", "/v1/items/\(try #require(children.first).id)/content", output: stored)
        #expect(try Data(contentsOf: stored) == bytes)
    }
}
