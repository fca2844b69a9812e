import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountBrowsingTests {
    @Test func sitesAppearAtTheRootAndTheRootIsNotWritable() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint.path).sorted()
        #expect(names == ["Archive", "Harbour Tower", "Riverside"])
        let mkdir = try fixture.shell("mkdir 'New site'")
        #expect(mkdir.status != 0 && mkdir.err.contains("Permission denied"))
    }

    @Test func aLargeFolderListsCompletelyInPagesAndStatDownloadsNothing() throws {
        let fixture = try MountFixture(pageSize: 100)
        defer { fixture.tearDown() }
        let site = try #require(try fixture.serverItem("Harbour Tower"))
        let folder = try JSONDecoder().decode(Item.self, from: Data(fixture.api.call(
            "POST", "/v1/items/\(site.id)/children", json: #"{"name":"Big","kind":"folder"}"#).body.utf8))
        // 2,500 files, created through the API from a local tree import would be faster, but
        // the API path is what clients see; a small body each.
        let tree = fixture.root.appendingPathComponent("tree")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        let script = "for i in $(seq -w 1 2500); do printf x | curl -sS -o /dev/null -H @\(fixture.root.path)/auth -H 'Expect:' --data-binary @- \"\(fixture.server.baseURL)/v1/items/\(folder.id)/children?name=file$i.txt\" || exit 1; done"
        try "Authorization: Bearer \(fixture.api.token!)\n".write(toFile: fixture.root.path + "/auth", atomically: true, encoding: .utf8)
        let seed = try run(URL(fileURLWithPath: "/bin/bash"), ["-c", script], timeout: 600)
        try #require(seed.status == 0, "seeding failed: \(seed.err)")

        let itemRequests = { fixture.server.log.split(separator: "\n").filter {
            $0.range(of: #"GET /v1/items/[A-Za-z0-9_-]{22} \d{3} "#, options: .regularExpression) != nil }.count }
        let itemRequestsBefore = itemRequests()
        let listing = try fixture.shell("ls -l 'Harbour Tower/Big' | tail -n +2 | wc -l")
        #expect(listing.out.trimmingCharacters(in: .whitespacesAndNewlines) == "2500")
        // readdirplus: `ls -l` costs no request per entry.
        #expect(itemRequests() - itemRequestsBefore <= 2, "ls -l made per-entry requests")
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.path("Harbour Tower/Big"))
        #expect(Set(names).count == 2500)
        let pagedRequests = fixture.server.log.components(separatedBy: "/children?limit=100").count - 1
        #expect(pagedRequests >= 25, "server log shows \(pagedRequests) paged requests")

        // Placeholders: stat, ls -l, find, du work from metadata.
        let contentRequestsBefore = fixture.server.log.components(separatedBy: "/content").count
        _ = try fixture.shell("stat 'Harbour Tower/Big/file0001.txt' && find . -name 'file2500.txt' && du -s 'Harbour Tower/Big'")
        #expect(fixture.server.log.components(separatedBy: "/content").count == contentRequestsBefore)
        var info = stat()
        #expect(stat(fixture.path("Harbour Tower/Big/file0007.txt"), &info) == 0 && info.st_size == 1)
    }

    @Test func aFileAddedThroughTheAPIAppearsWithoutARemount() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside")).isEmpty)
        let site = try #require(try fixture.serverItem("Riverside"))
        _ = try fixture.api.call("POST", "/v1/items/\(site.id)/children?name=from-api.txt", extra: ["--data-binary", "remote"])
        #expect(try eventually(timeout: .seconds(15)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside"))) == ["from-api.txt"]
        })
        #expect(try String(contentsOfFile: fixture.path("Riverside/from-api.txt"), encoding: .utf8) == "remote")
        // A remote edit shows up too.
        let file = try #require(try fixture.serverItem("Riverside/from-api.txt"))
        _ = try fixture.api.call("PUT", "/v1/items/\(file.id)/content", extra: ["--data-binary", "edited remotely"])
        #expect(try eventually(timeout: .seconds(15)) {
            (try? String(contentsOfFile: fixture.path("Riverside/from-api.txt"), encoding: .utf8)) == "edited remotely"
        })
    }

    @Test func aReadOnlyGrantShowsReadOnlyModesAndRefusesWrites() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let site = try #require(try fixture.serverItem("Archive"))
        // The admin writes into the read-only site through its own session (sign in as admin).
        _ = try run(ServerProcess.executable, ["user", "add", "admin", "--data", fixture.data.path], stdin: "admin-pass\n")
        _ = try run(ServerProcess.executable, ["grant", "admin", "Archive", "--data", fixture.data.path])
        var admin = Curl(baseURL: fixture.server.baseURL)
        let session = try admin.call("POST", "/v1/session", json: #"{"username":"admin","password":"admin-pass"}"#)
        admin.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        _ = try admin.call("POST", "/v1/items/\(site.id)/children?name=record.txt", extra: ["--data-binary", "kept"])

        #expect(try eventually { FileManager.default.fileExists(atPath: fixture.path("Archive/record.txt")) })
        var info = stat()
        #expect(stat(fixture.path("Archive/record.txt"), &info) == 0 && info.st_mode & 0o777 == 0o444)
        #expect(stat(fixture.path("Archive"), &info) == 0 && info.st_mode & 0o777 == 0o555)
        #expect(try fixture.shell("cat Archive/record.txt").out == "kept")
        for command in ["echo x > Archive/record.txt", "echo x > Archive/new.txt", "mkdir Archive/d", "rm Archive/record.txt",
                        "mv Archive/record.txt Archive/renamed.txt"] {
            let result = try fixture.shell(command)
            #expect(result.status != 0 && result.err.contains("Permission denied"), "\(command): \(result.err)")
        }
        #expect(try fixture.serverContent("Archive/record.txt") == "kept")
    }
}

@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountContentTests {
    @Test func partialReadOfALargeFileFetchesOnlyARange() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let site = try #require(try fixture.serverItem("Harbour Tower"))
        let big = fixture.root.appendingPathComponent("big.bin")
        _ = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "head -c 67108864 /dev/urandom > \(big.path)"])
        _ = try fixture.api.call("POST", "/v1/items/\(site.id)/children?name=big.bin", extra: ["-H", "Expect:", "--data-binary", "@\(big.path)"])
        let head = try fixture.shell("head -c 4096 'Harbour Tower/big.bin' | wc -c")
        #expect(head.out.trimmingCharacters(in: .whitespacesAndNewlines) == "4096")
        let sent = Self.contentBytes(in: fixture.server.log)
        #expect(sent > 0 && sent <= 1 << 20, "\(sent) bytes of content sent for a 4 KiB read")
        #expect(fixture.localCopies.isEmpty)
        // A full read returns exactly the file.
        let same = try fixture.shell("cmp 'Harbour Tower/big.bin' \(big.path) && echo same")
        #expect(same.out.contains("same"), "\(same.err)")
    }

    /// Sum of bytes the server sent for content GETs (from its request log).
    static func contentBytes(in log: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("GET /v1/items/") && $0.contains("/content") }.reduce(0) { total, line in
            let fields = line.split(separator: " ")
            guard let index = fields.firstIndex(where: { $0.hasPrefix("/v1/items/") }), fields.count > index + 2 else { return total }
            return total + (Int(fields[index + 2]) ?? 0)
        }
    }

    @Test func writeCloseSyncPutsContentOnTheServerAndCleansUp() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        try "first draft\n".write(toFile: fixture.path("Harbour Tower/report.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(try fixture.serverContent("Harbour Tower/report.txt") == "first draft\n")
        // Edit in place: append, and overwrite the middle; each save goes at once.
        _ = try fixture.shell("echo 'second line' >> 'Harbour Tower/report.txt'")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "30"]).status == 0)
        let handle = try #require(FileHandle(forUpdatingAtPath: fixture.path("Harbour Tower/report.txt")))
        try handle.seek(toOffset: 0)
        handle.write(Data("FIRST".utf8))
        try handle.close()
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(try fixture.serverContent("Harbour Tower/report.txt") == "FIRST draft\nsecond line\n")
        let item = try #require(try fixture.serverItem("Harbour Tower/report.txt"))
        let versions = try JSONDecoder().decode(VersionList.self, from: Data(fixture.api.call("GET", "/v1/items/\(item.id)/versions").body.utf8))
        #expect(versions.versions.count == 3)  // first draft (a new file is created with its content), append, overwrite
        #expect(try eventually { fixture.localCopies.isEmpty })
        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.status == 0 && status.out.contains("pending uploads: 0"))
    }

    @Test func truncateAndUtimensReachTheServer() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        try "0123456789".write(toFile: fixture.path("Riverside/t.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(truncate(fixture.path("Riverside/t.txt"), 4) == 0)
        // touch opens the file for writing (the mount takes an editing lock in the background)
        // and sets the time through that descriptor.
        let touch = try fixture.shell("touch -d '2024-03-01 12:34:56.789' Riverside/t.txt")
        #expect(touch.status == 0, "touch: \(touch.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/t.txt") == "0123")
        let item = try #require(try fixture.serverItem("Riverside/t.txt"))
        #expect(item.modifiedAt.rfc3339.hasPrefix("2024-03-01T"), "server: \(item.modifiedAt.rfc3339); log: \(fixture.daemonLog.suffix(2000))")
        var info = stat()
        #expect(stat(fixture.path("Riverside/t.txt"), &info) == 0 && info.st_size == 4)
    }
}

@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountNamespaceTests {
    @Test func mkdirRmMvAndCrossSiteMove() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let setup = try fixture.shell("mkdir -p 'Harbour Tower/Plans/Level 1' && echo plan > 'Harbour Tower/Plans/Level 1/plan.txt' && echo b > 'Harbour Tower/b.txt'")
        #expect(setup.status == 0, "\(setup.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Harbour Tower/Plans/Level 1/plan.txt") == "plan\n")

        let rmdirFull = try fixture.shell("rmdir 'Harbour Tower/Plans'")
        #expect(rmdirFull.status != 0 && rmdirFull.err.contains("not empty"))
        // Rename and move within the site keep the item's id.
        let planID = try #require(try fixture.serverItem("Harbour Tower/Plans/Level 1/plan.txt")).id
        #expect(try fixture.shell("mv 'Harbour Tower/Plans/Level 1/plan.txt' 'Harbour Tower/plan-final.txt'").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)  // renames settle like saves
        #expect(try fixture.serverItem("Harbour Tower/plan-final.txt")?.id == planID)
        // Rename over an existing file replaces it.
        #expect(try fixture.shell("mv 'Harbour Tower/plan-final.txt' 'Harbour Tower/b.txt'").status == 0)
        #expect(try fixture.serverContent("Harbour Tower/b.txt") == "plan\n")
        #expect(try fixture.serverItem("Harbour Tower/plan-final.txt") == nil)
        // Across sites, mv copies (EXDEV) and removes the source.
        let crossSite = try fixture.shell("mv 'Harbour Tower/b.txt' 'Riverside/b.txt'")
        #expect(crossSite.status == 0, "\(crossSite.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/b.txt") == "plan\n")
        #expect(try fixture.serverItem("Harbour Tower/b.txt") == nil)
        // rm -r removes a tree.
        #expect(try fixture.shell("rm -r 'Harbour Tower/Plans'").status == 0)
        #expect(try fixture.serverItem("Harbour Tower/Plans") == nil)
        #expect(try fixture.children(try #require(try fixture.serverItem("Harbour Tower")).id).isEmpty)
    }

    @Test func anExpiredSessionGivesEACCESUntilLoginAgain() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        // Revoke the mount's own session on the server.
        let credentials = try JSONDecoder().decode([String: [String: String]].self, from: Data(contentsOf:
            fixture.root.appendingPathComponent("config/sitefs/credentials.json")))
        let token = try #require(credentials[fixture.server.baseURL]?["token"])
        _ = try Curl(baseURL: fixture.server.baseURL, token: token).call("DELETE", "/v1/session")
        let refused = try fixture.shell("ls Riverside")
        #expect(refused.status != 0 && refused.err.contains("Permission denied"), "\(refused)")
        #expect(fixture.daemonLog.contains("sitefs login"))
        // Signing in again fixes it without a remount.
        #expect(try fixture.sitefs(["login", fixture.server.baseURL, "--user", "anna"], stdin: MountFixture.password + "\n").status == 0)
        #expect(try fixture.shell("ls Riverside").status == 0)
    }

    @Test func mountRefusesWithAReason() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let busy = try fixture.sitefs(["mount", fixture.server.baseURL, fixture.mountpoint.path])
        #expect(busy.status != 0 && busy.err.contains("busy"))
        let elsewhere = fixture.root.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let notSignedIn = try fixture.sitefs(["mount", "http://127.0.0.1:9", elsewhere.path])
        #expect(notSignedIn.status != 0 && notSignedIn.err.contains("not signed in"))
        let missing = try fixture.sitefs(["mount", fixture.server.baseURL, fixture.root.appendingPathComponent("nope").path])
        #expect(missing.status != 0 && missing.err.contains("not an existing folder"))
    }
}

@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountLifecycleTests {
    @Test func aRemountOnTheSameCacheStartsWarmAndCatchesUp() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        #expect(try fixture.shell("mkdir -p Riverside/Plans && echo a > Riverside/Plans/a.txt && ls -l Riverside/Plans").status == 0)
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        #expect(!fixture.isMounted)
        // While unmounted, the server changes.
        let plans = try #require(try fixture.serverItem("Riverside/Plans"))
        _ = try fixture.api.call("POST", "/v1/items/\(plans.id)/children?name=b.txt", extra: ["--data-binary", "b"])
        let listingsBefore = fixture.server.log.components(separatedBy: "/v1/items/\(plans.id)/children").count
        let mount = try fixture.sitefs(["mount", fixture.server.baseURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                                        "--poll-interval", "0.3"])
        #expect(mount.status == 0, "\(mount.err)")
        // The cached listing serves at once and the saved change-feed cursor brings in b.txt.
        #expect(try eventually(timeout: .seconds(10)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside/Plans")).sorted()) == ["a.txt", "b.txt"]
        })
        #expect(fixture.server.log.components(separatedBy: "/v1/items/\(plans.id)/children").count == listingsBefore,
                "the remount listed the folder again instead of using its cache")
    }

    /// A cache folder and log file that existed with loose modes are made private: they hold
    /// item names, contents and the journal.
    @Test func theCacheAndLogArePrivateEvenWhenTheyExistedWithLooseModes() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        let log = fixture.root.appendingPathComponent("sitefs.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        chmod(log.path, 0o644)
        chmod(fixture.cache.path, 0o755)
        for file in ["metadata.sqlite", "journal.sqlite"] { chmod(fixture.cache.appendingPathComponent(file).path, 0o644) }
        let mount = try fixture.sitefs(["mount", fixture.server.baseURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                                        "--log-file", log.path])
        try #require(mount.status == 0, "\(mount.err)")
        try #require(try fixture.shell("echo x > Riverside/x.txt").status == 0)
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0o7777
        }
        #expect(mode(fixture.cache.path) == 0o700)
        #expect(mode(log.path) == 0o600)
        for file in ["metadata.sqlite", "journal.sqlite"] { #expect(mode(fixture.cache.appendingPathComponent(file).path) == 0o600, "\(file)") }
        // Files the daemon makes from now on are its user's alone, whatever the umask.
        let made = try FileManager.default.contentsOfDirectory(atPath: fixture.cache.appendingPathComponent("content").path)
        for name in made { #expect(mode(fixture.cache.appendingPathComponent("content/\(name)").path) == 0o600, "\(name)") }
        #expect(mode(fixture.cache.appendingPathComponent("journal.sqlite-wal").path) & 0o077 == 0)
    }

    /// A name with a newline and an escape sequence stays inside its one log line.
    @Test func namesCannotForgeLogLines() throws {
        let fixture = try MountFixture()  // logs at debug: every unlink names its file
        defer { fixture.tearDown() }
        let forged = "note\n2026-11-24T10:00:00+0000 error sitefs : FORGED\u{1B}[2J.txt"
        let path = fixture.path("Riverside/\(forged)")
        try #require(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        try #require(fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(unlink(path) == 0)
        #expect(try eventually { fixture.daemonLog.contains("FORGED") })
        for line in fixture.daemonLog.split(separator: "\n") where line.contains("FORGED") {
            #expect(!line.hasPrefix("2026-11-24T10:00:00"), "a forged line: \(line)")
            #expect(line.contains("note\\n2026") && !line.contains("\u{1B}"), "not escaped: \(line)")
        }
    }

    @Test func anUnreachableServerFailsTheMountWithAReasonAndReadsWithEIO() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2"])
        defer { fixture.tearDown() }
        try "cached".write(toFile: fixture.path("Riverside/kept.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        _ = try fixture.shell("ls -l Riverside")
        fixture.server.stop()
        let started = Date()
        let read = try fixture.shell("cat Riverside/kept.txt", timeout: 30)
        // EIO when the read is what finds the server gone; "Network is unreachable" when the
        // change feed's polls found it first and the mount is offline.
        #expect(read.status != 0 && (read.err.contains("Input/output error") || read.err.contains("Network is unreachable")), "\(read)")
        #expect(Date().timeIntervalSince(started) < 20, "a read of an unreachable server must fail within bounded time")
        // Browsing still works from cached metadata.
        #expect(try fixture.shell("ls Riverside").out.contains("kept.txt"))
        let elsewhere = fixture.root.appendingPathComponent("second")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let refused = try fixture.sitefs(["mount", fixture.server.baseURL, elsewhere.path])
        #expect(refused.status != 0 && refused.err.contains("unreachable"), "\(refused.err)")
    }

    @Test func chmodChownAndCopyToolsWork() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let source = fixture.root.appendingPathComponent("source")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try "one".write(to: source.appendingPathComponent("one.txt"), atomically: true, encoding: .utf8)
        try "two".write(to: source.appendingPathComponent("sub/two.txt"), atomically: true, encoding: .utf8)
        let copy = try fixture.shell("cp -a '\(source.path)' 'Harbour Tower/copied' && chmod 600 'Harbour Tower/copied/one.txt' && chown \(getuid()) 'Harbour Tower/copied/one.txt'")
        #expect(copy.status == 0, "\(copy.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Harbour Tower/copied/sub/two.txt") == "two")
        // Shared mmap writes reach the server too.
        let mmap = try run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
            import mmap
            with open('\(fixture.path("Harbour Tower/copied/one.txt"))', 'r+b') as f:
                m = mmap.mmap(f.fileno(), 0)
                m[0:3] = b'ONE'
                m.flush()
                m.close()
            """])
        #expect(mmap.status == 0, "\(mmap.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Harbour Tower/copied/one.txt") == "ONE")
    }
}
