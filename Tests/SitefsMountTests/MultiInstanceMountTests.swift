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

        init() throws {
            database = try PostgresCluster.shared().createDatabase()
            blobs = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-blobs-\(UUID().uuidString.prefix(8))")
            a = try MountFixture(store: .postgres(database, blobs: blobs, seeding: true))
            b = try MountFixture(extraMountArguments: ["--change-wait", "25", "--poll-interval", "30"],
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
        #expect(!FileManager.default.fileExists(atPath: b.path("Harbour Tower/minutes.txt")))
    }

    /// The same document saved on both mounts from one version: the first save through
    /// either instance wins, the other is kept as a conflict copy, and both mounts show both.
    @Test func aConflictBetweenTwoInstancesKeepsBothVersionsOnBothMounts() throws {
        let mounts = try TwoMounts()
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
}
