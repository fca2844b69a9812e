import Foundation
import SitefsTestSupport
import Testing

/// The change feed as a long-poll: a mount's request waits at the server until something
/// changes, so an edit made elsewhere shows within a moment, not at the next poll.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct ChangeWaitTests {
    @Test func aChangeMadeElsewhereShowsLongBeforeTheNextPoll() throws {
        // Polls an hour apart: only the held request can bring the change within the test.
        let fixture = try MountFixture(extraMountArguments: ["--poll-interval", "3600", "--change-wait", "25"])
        defer { fixture.tearDown() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside")).isEmpty)
        let site = try #require(try fixture.serverItem("Riverside"))
        // Once the mount's first round has its cursor, the next request is held at the server.
        #expect(eventually(timeout: .seconds(20)) { fixture.server.log.contains("GET /v1/changes 200") },
                 "\(fixture.server.log.suffix(2000))")
        _ = try fixture.api.call("POST", "/v1/items/\(site.id)/children?name=from-elsewhere.txt", extra: ["--data-binary", "hello"])
        #expect(eventually(timeout: .seconds(15)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside")))?.contains("from-elsewhere.txt") == true
        }, "the change did not reach the mount; daemon log: \(fixture.daemonLog.suffix(2000))")
        #expect(try String(contentsOfFile: fixture.path("Riverside/from-elsewhere.txt"), encoding: .utf8) == "hello")
    }
}
