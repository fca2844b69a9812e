import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Finding a document and any earlier version of it, on a real mount (issue 36): `sitefs
/// search` and `MOUNT/.search/QUERY/` find a file made through another mount moments ago, and
/// what is opened there is that document; `sitefs versions` and `sitefs restore` bring back an
/// old version as the newest; `MOUNT/.versions/PATH/` reads any version by range.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct SearchAndVersionsMountTests {
    private struct VersionList: Decodable {
        struct Version: Decodable { var etag: String }
        var versions: [Version]
    }

    private func versions(_ fixture: MountFixture, _ relative: String) throws -> [String] {
        let item = try #require(try fixture.serverItem(relative))
        let body = try fixture.api.call("GET", "/v1/items/\(item.id)/versions").body
        return try JSONDecoder().decode(VersionList.self, from: Data(body.utf8)).versions.map(\.etag)
    }

    @Test func aFileMadeThroughAnotherMountIsFoundAndEditedWhereItWasFound() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let other = try DaemonMount(prefix: "search-b")
        defer { other.tearDown() }
        try other.login(fixture.server.baseURL, user: "anna", password: MountFixture.password)
        try other.mount(["--poll-interval", "0.3", "--log-level", "debug"])
        let made = try other.shell("mkdir -p Riverside/Inspections && printf 'Brandschutztür geprüft\\n' > 'Riverside/Inspections/Fire door inspection.txt'")
        #expect(made.status == 0, "\(made.err)")
        try other.sync()

        // By name, at once: the server's name index needs no worker.
        let found = try fixture.sitefs(["search", fixture.mountpoint.path, "fire", "door", "-0"])
        #expect(found.status == 0, "\(found.err)")
        let expected = fixture.path("Riverside/Inspections/Fire door inspection.txt")
        #expect(found.out.split(separator: "\0").map(String.init) == [expected], "\(found.out)")
        // A folder found is printed too (it has no entry in the search folder).
        let folders = try fixture.sitefs(["search", fixture.mountpoint.path, "inspections", "-0"])
        #expect(folders.status == 0, "\(folders.err)")
        #expect(folders.out.split(separator: "\0").map(String.init) == [fixture.path("Riverside/Inspections")], "\(folders.out)")
        let listed = try fixture.shell("ls '.search/fire door'")
        #expect(listed.out == "Fire door inspection.txt\n", "\(listed.out)\(listed.err)")

        // By the text, ignoring case and accents, once the server has read it.
        #expect(eventually(timeout: .seconds(30), every: .milliseconds(300)) {
            (try? fixture.shell("ls '.search/BRANDSCHUTZTUR'").out) == "Fire door inspection.txt\n"
        }, "the text was never found")

        // Edited where it was found: the one document changes.
        let folder = ".search/fire door"
        #expect(try fixture.shell("stat -c %i '\(folder)/Fire door inspection.txt'").out
            == (try fixture.shell("stat -c %i 'Riverside/Inspections/Fire door inspection.txt'").out), "the same inode")
        #expect(try fixture.shell("echo 'door 3 closes' >> '\(folder)/Fire door inspection.txt'").status == 0)
        try fixture.mount.sync()
        #expect(try fixture.serverContent("Riverside/Inspections/Fire door inspection.txt") == "Brandschutztür geprüft\ndoor 3 closes\n")
        #expect(eventually(timeout: .seconds(30), every: .milliseconds(300)) {
            (try? other.shell("cat 'Riverside/Inspections/Fire door inspection.txt'").out) == "Brandschutztür geprüft\ndoor 3 closes\n"
        }, "the other mount never saw the edit")
        // Nothing can be made in a search folder.
        #expect(try fixture.shell("touch '\(folder)/new.txt'").status != 0)
        #expect(try fixture.shell("ls -a").out.contains(".search") == false, "never listed at the root")
    }

    @Test func restoreMakesAnOldVersionTheNewestAndVersionsReadByRange() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let file = "Harbour Tower/report.txt"
        let first = String(repeating: "first version of the report\n", count: 5000)  // 140 KB: reads in ranges
        try first.write(toFile: fixture.path(file), atomically: false, encoding: .utf8)
        try fixture.mount.sync()
        #expect(try fixture.shell("echo 'second version' > '\(file)'").status == 0)
        try fixture.mount.sync()
        let before = try versions(fixture, file)
        #expect(before.count == 2)

        let listed = try fixture.sitefs(["versions", fixture.path(file)])
        #expect(listed.status == 0, "\(listed.err)")
        #expect(listed.out.split(separator: "\n").filter { $0.contains("(current)") }.count == 1, "\(listed.out)")

        let restored = try fixture.sitefs(["restore", fixture.path(file), before[1]])
        #expect(restored.status == 0, "\(restored.out)\(restored.err)")
        #expect(try fixture.shell("cat '\(file)'").out == first)
        let after = try versions(fixture, file)
        #expect(after.count == 3, "the version list grows by one")
        #expect(Array(after.dropFirst()) == before, "nothing destroyed")

        // .versions/PATH/: one read-only file per version, read by range.
        let folder = ".versions/Harbour Tower/report.txt"
        let names = try fixture.shell("ls '\(folder)'").out.split(separator: "\n").map(String.init)
        #expect(names.count == 3, "\(names)")
        let oldest = try #require(names.sorted().first)
        let item = try #require(try fixture.serverItem(file))
        let serverCopy = fixture.mount.root.appendingPathComponent("oldest-from-server")
        let downloaded = try fixture.api.call("GET", "/v1/items/\(item.id)/content?version=\(before[1])").body
        try downloaded.write(to: serverCopy, atomically: false, encoding: .utf8)
        #expect(try fixture.shell("cmp '\(folder)/\(oldest)' '\(serverCopy.path)'").status == 0)
        let middle = try fixture.shell("dd if='\(folder)/\(oldest)' bs=1000 skip=70 count=2 status=none | md5sum")
        let expected = try fixture.shell("dd if='\(serverCopy.path)' bs=1000 skip=70 count=2 status=none | md5sum")
        #expect(middle.out == expected.out && middle.status == 0)
        #expect(try fixture.shell("echo x > '\(folder)/\(oldest)'").status != 0, "versions are read-only")
    }

    /// WebDAV servers here neither search nor keep versions (see the backend's README): the
    /// mount searches names over what it has listed and says so; versions are refused clearly.
    @Test func aWebDAVServerIsSearchedByListedNamesAndKeepsNoVersions() throws {
        let mount = try ScenarioMount(.apache) { server in
            try server.makeFolder("Harbour Tower/Forms")
            try server.write("Harbour Tower/Forms/Fire door inspection.txt", "door 3\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls 'Harbour Tower/Forms'").out == "Fire door inspection.txt\n")
        let found = try mount.sitefs(["search", mount.mountpoint.path, "FIRE", "door", "-0"])
        #expect(found.status == 0, "\(found.err)")
        #expect(found.out.split(separator: "\0").map(String.init) == [mount.path("Harbour Tower/Forms/Fire door inspection.txt")])
        #expect(found.err.contains("names only"), "says what was searched: \(found.err)")
        #expect(try mount.shell("ls '.search/fire door'").out == "Fire door inspection.txt\n")
        let versions = try mount.sitefs(["versions", mount.path("Harbour Tower/Forms/Fire door inspection.txt")])
        #expect(versions.status != 0 && (versions.out + versions.err).contains("keeps no versions"), "\(versions.out)\(versions.err)")
    }
}
