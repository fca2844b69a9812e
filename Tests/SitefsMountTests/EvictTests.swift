import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// `sitefs evict` ("Free up space"), as an unprivileged user on a real mount: a pinned
/// folder is unpinned and its local copies removed, the cache shrinks by what it reports,
/// and a file with a save not yet on the server is kept and named.
@Suite(.serialized, .enabled(if: fuseAvailable && TestAccount.canSwitchUsers, "needs /dev/fuse and root to make test accounts"))
struct EvictTests {
    @Test func freeingUpAPinnedFolderKeepsOnlyWhatTheServerLacks() throws {
        try TestAccount.openFUSEToUsers()
        let user = try TestAccount.named("sitefs-test-user")
        let fixture = try MountFixture(throughFaultProxy: true, as: user)
        defer { fixture.tearDown() }
        // Three 256 KiB files made on the server, pinned here.
        try fixture.serverFolder("Plans", in: "Riverside")
        for name in ["a.pdf", "b.pdf", "c.pdf"] { try fixture.serverFile(name, Data(repeating: 0x5A, count: 256 << 10), in: "Riverside/Plans") }
        try #require(eventually(timeout: .seconds(15)) { (try? fixture.shell("ls Riverside/Plans").out.split(separator: "\n").count) == 3 })
        #expect(try fixture.sitefs(["pin", fixture.path("Riverside/Plans")]).status == 0)
        #expect(try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path]).status == 0)
        // An edit of one of them, not sent yet: the server cannot be reached for now.
        let proxy = try #require(fixture.proxy)
        proxy.mode = .refuse
        #expect(try fixture.shell("printf 'marked up' > Riverside/Plans/c.pdf").status == 0)
        let before = contentBytes(fixture)
        #expect(before >= 512 << 10, "two pinned copies and the edit: \(before) bytes")

        let evicted = try fixture.sitefs(["evict", fixture.path("Riverside/Plans")])
        #expect(evicted.status == 0, "\(evicted.err)")
        let lines = evicted.out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("freed ") == true && lines.first?.hasSuffix("(2 files) in Riverside/Plans") == true, "\(evicted.out)")
        #expect(lines.contains("  unpinned first: Riverside/Plans"), "\(evicted.out)")
        #expect(lines.contains("    Riverside/Plans/c.pdf: a save is not on the server yet"), "\(evicted.out)")
        let after = contentBytes(fixture)
        // What it says it freed is what the cache lost (the report rounds to a tenth).
        let reported = try #require(Self.reportedBytes(lines.first ?? ""), "\(evicted.out)")
        #expect(abs(Double(before - after) - reported) <= reported * 0.06, "cache \(before) -> \(after), reported \(reported)")
        for name in ["a.pdf", "b.pdf"] {
            #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state Riverside/Plans/\(name)").out == "online-only")
        }
        let state = try fixture.shell("getfattr --only-values -n user.sitefs.state Riverside/Plans/c.pdf").out
        #expect(["pending", "uploading"].contains(state), "\(state)")  // queued, or being tried again
        proxy.mode = .pass
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/Plans/c.pdf") == "marked up", "the kept edit reached the server")

        // The mount root and a path outside any mount are refused with a reason.
        let refused = try fixture.sitefs(["evict", fixture.mountpoint.path, "/tmp"])
        #expect(refused.status != 0)
        #expect(refused.err.contains("not the mount root"), "\(refused.err)")
        #expect(refused.err.contains("not in a sitefs mount"), "\(refused.err)")
    }

    /// Bytes on disk under the mount's `content/` folder.
    private func contentBytes(_ fixture: MountFixture) -> Int64 {
        let folder = fixture.cache.appendingPathComponent("content").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.reduce(0) { total, name in
            var info = stat()
            return stat(folder + "/" + name, &info) == 0 ? total + Int64(info.st_blocks) * 512 : total
        }
    }

    /// "freed 512.0 KiB (2 files) in ..." as bytes.
    static func reportedBytes(_ line: String) -> Double? {
        let words = line.split(separator: " ")
        guard words.count > 2, let value = Double(words[1]) else { return nil }
        let units: [Substring: Double] = ["B": 1, "KiB": 1024, "MiB": 1_048_576, "GiB": 1_073_741_824]
        return units[words[2]].map { value * $0 }
    }
}
