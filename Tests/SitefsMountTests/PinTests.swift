import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Issue 20, pins: `sitefs pin` and `user.sitefs.pinned` keep files and folders on this
/// device (downloaded in the background, kept current, never cleaned up, restored at the
/// next mount, within `--cache-size`), and they are what opens and reads while the server is
/// unreachable, when online-only files fail at once with ENETUNREACH.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct PinTests {
    // MARK: The server side, through the API (as another user's uploads would be)

    /// A new version of a server file, as another user's save.
    private func serverEdit(_ fixture: MountFixture, _ relative: String, to text: String) throws {
        let item = try #require(try fixture.serverItem(relative), "no \(relative) on the server")
        let put = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", text])
        try #require((200..<300).contains(put.status), "PUT \(relative): \(put.status) \(put.body)")
    }

    /// How many times the server was asked for a file's content (from its request log).
    private func contentRequests(_ fixture: MountFixture, _ item: Item) -> Int {
        fixture.server.log.components(separatedBy: "GET /v1/items/\(item.id)/content").count - 1
    }

    // MARK: The mount, as a user drives it

    /// Waits until the mount shows `relative` (the change feed brought it).
    private func waitUntilShown(_ fixture: MountFixture, _ relative: String) throws {
        try #require(eventually(timeout: .seconds(15)) { FileManager.default.fileExists(atPath: fixture.path(relative)) },
                     "\(relative) never showed in the mount")
    }

    /// `getfattr --only-values -n NAME`: nil when it fails (the error is in `missingAttribute`).
    private func attribute(_ fixture: MountFixture, _ relative: String, _ name: String) throws -> String? {
        let result = try fixture.shell("getfattr --only-values -n \(name) '\(relative)'")
        return result.status == 0 ? result.out : nil
    }

    /// Whether `getfattr` says the item has no such attribute (ENODATA), not some other failure.
    private func missingAttribute(_ fixture: MountFixture, _ relative: String, _ name: String) throws -> Bool {
        let result = try fixture.shell("getfattr --only-values -n \(name) '\(relative)'")
        return result.status != 0 && result.err.contains("No such attribute")
    }

    /// What `sitefs status` prints (its error, when it fails).
    private func status(_ fixture: MountFixture) -> String {
        do {
            let result = try fixture.sitefs(["status", fixture.mountpoint.path])
            return result.status == 0 ? result.out : "sitefs status failed: \(result.err)"
        } catch {
            return "sitefs status failed: \(error)"
        }
    }

    /// Whether `sitefs status` works and lists no pins.
    private func showsNoPins(_ fixture: MountFixture) -> Bool {
        let shown = status(fixture)
        return shown.contains("pending uploads: ") && !shown.contains("pinned")
    }

    /// `sitefs sync --pinned`, which must succeed.
    private func syncPinned(_ fixture: MountFixture, timeout: Int = 30) throws {
        let sync = try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path, "--timeout", String(timeout)],
                                      timeout: TimeInterval(timeout + 30))
        try #require(sync.status == 0, "sitefs sync --pinned: \(sync.out) \(sync.err)\nstatus: \(status(fixture))")
    }

    private func sync(_ fixture: MountFixture) throws {
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"], timeout: 90)
        try #require(sync.status == 0, "sitefs sync: \(sync.err)")
    }

    private func pin(_ fixture: MountFixture, _ relative: String) throws {
        let pin = try fixture.sitefs(["pin", fixture.path(relative)])
        try #require(pin.status == 0, "sitefs pin \(relative): \(pin.err)")
        #expect(pin.out == "pinned \(relative)\n")
    }

    /// The server becomes unreachable (the proxy refuses), and the mount notices by itself
    /// (its change-feed rounds fail twice in a row).
    private func goOffline(_ fixture: MountFixture) throws {
        try #require(fixture.proxy).mode = .refuse
        try #require(eventually(timeout: .seconds(15)) { status(fixture).contains("\noffline since ") },
                     "the mount never said it is offline: \(status(fixture))")
    }

    /// The contents of the files in CACHE_DIR/content, sorted.
    private func localCopyContents(_ fixture: MountFixture) -> [String] {
        let folder = fixture.cache.appendingPathComponent("content")
        return fixture.localCopies.map { (try? String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) ?? "<unreadable>" }.sorted()
    }

    /// A remount on the fixture's cache dir, through the same URL (the proxy's, when there is one).
    private func remount(_ fixture: MountFixture, _ extra: [String] = []) throws {
        let mount = try fixture.sitefs(["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                                        "--poll-interval", "0.3", "--log-level", "debug"] + extra)
        try #require(mount.status == 0, "remount: \(mount.err)\nlog: \(fixture.daemonLog.suffix(4000))")
    }

    // MARK: Tests

    @Test func aPinnedFolderStaysLocalAndReadsOfflineWhileOnlineOnlyFilesFailFast() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "5", "--write-back-delay", "0.5"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let pinnedFiles = ["Riverside/Plans/a.txt": "plan a\n", "Riverside/Plans/b.txt": "plan b\n",
                           "Riverside/Plans/c.txt": "plan c\n", "Riverside/Plans/Level 1/d.txt": "plan d, level 1\n"]
        try fixture.serverFolder("Plans", in: "Riverside")
        try fixture.serverFolder("Level 1", in: "Riverside/Plans")
        for (path, text) in pinnedFiles {
            let url = URL(fileURLWithPath: path)
            try fixture.serverFile(url.lastPathComponent, text, in: url.deletingLastPathComponent().relativePath)
        }
        try fixture.serverFile("elsewhere.txt", "online only\n", in: "Harbour Tower")
        try fixture.serverFile("other.txt", "not pinned\n", in: "Harbour Tower")
        for path in pinnedFiles.keys { try waitUntilShown(fixture, path) }
        try waitUntilShown(fixture, "Harbour Tower/elsewhere.txt")

        try pin(fixture, "Riverside/Plans")
        try syncPinned(fixture)
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 4 of 4 files local (37 B of 37 B)\n"), "\(shown)")
        #expect(shown.contains("\n  pinned: Riverside/Plans\n"), "\(shown)")
        #expect(try attribute(fixture, "Riverside/Plans", "user.sitefs.pinned") == "1")
        #expect(try attribute(fixture, "Riverside/Plans", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Plans/Level 1", "user.sitefs.pinned") == "folder")
        for path in pinnedFiles.keys.sorted() {
            #expect(try attribute(fixture, path, "user.sitefs.state") == "downloaded", "\(path)")
            #expect(try attribute(fixture, path, "user.sitefs.pinned") == "folder", "\(path)")
        }
        #expect(try attribute(fixture, "Harbour Tower/elsewhere.txt", "user.sitefs.state") == "online-only")
        #expect(try missingAttribute(fixture, "Harbour Tower/elsewhere.txt", "user.sitefs.pinned"))
        // Downloaded without anyone opening them: one local copy per pinned file.
        #expect(localCopyContents(fixture) == pinnedFiles.values.sorted())

        // Opened and closed, they stay; an unpinned file's copy (written, so it has one) goes
        // once it is on the server.
        for (path, text) in pinnedFiles { #expect(try fixture.shell("cat '\(path)'").out == text, "\(path)") }
        #expect(try fixture.shell("echo more >> 'Harbour Tower/other.txt'").status == 0)
        try sync(fixture)
        #expect(try fixture.serverContent("Harbour Tower/other.txt") == "not pinned\nmore\n")
        #expect(eventually(timeout: .seconds(10)) { localCopyContents(fixture) == pinnedFiles.values.sorted() },
                "local copies: \(localCopyContents(fixture))")

        // Offline: pinned files read from their local copies; online-only ones fail at once.
        _ = try fixture.shell("ls -l 'Harbour Tower' Riverside/Plans")  // both folders known
        try goOffline(fixture)
        for (path, text) in pinnedFiles {
            let read = try fixture.shell("cat '\(path)'")
            #expect(read.status == 0 && read.out == text, "offline read of \(path): \(read.err)")
        }
        #expect(try attribute(fixture, "Riverside/Plans/a.txt", "user.sitefs.state") == "downloaded")
        _ = try fixture.shell("cat 'Harbour Tower/elsewhere.txt'")  // the first one may be the one that finds out
        let started = Date()
        let online = try fixture.shell("cat 'Harbour Tower/elsewhere.txt'")
        let took = Date().timeIntervalSince(started)
        #expect(online.status != 0 && online.err.contains("Network is unreachable"), "online-only offline: \(online)")
        #expect(took < 3, "an online-only file failed after \(took) s (io-timeout 5)")

        // Edited offline; sent when the server is back.
        let edit = try fixture.shell("echo more >> Riverside/Plans/a.txt")
        #expect(edit.status == 0, "offline edit of a pinned file: \(edit.err)")
        #expect(try fixture.shell("cat Riverside/Plans/a.txt").out == "plan a\nmore\n")
        #expect(try fixture.serverContent("Riverside/Plans/a.txt") == "plan a\n")
        try #require(fixture.proxy).mode = .pass
        try sync(fixture)
        #expect(try fixture.serverContent("Riverside/Plans/a.txt") == "plan a\nmore\n")
        #expect(eventually(timeout: .seconds(10)) { !status(fixture).contains("offline since") })
        // Still pinned and local, at the version it uploaded.
        try syncPinned(fixture)
        #expect(try attribute(fixture, "Riverside/Plans/a.txt", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Plans/a.txt", "user.sitefs.version") == fixture.serverItem("Riverside/Plans/a.txt")?.etag)
        var expected = pinnedFiles
        expected["Riverside/Plans/a.txt"] = "plan a\nmore\n"
        #expect(eventually(timeout: .seconds(10)) { localCopyContents(fixture) == expected.values.sorted() },
                "local copies: \(localCopyContents(fixture))")
    }

    @Test func filesAddedAndChangedOnTheServerInAPinnedFolderBecomeLocalWithoutBeingOpened() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "5"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        try fixture.serverFolder("Drawings", in: "Riverside")
        try fixture.serverFile("section.txt", "first\n", in: "Riverside/Drawings")
        try waitUntilShown(fixture, "Riverside/Drawings/section.txt")
        try pin(fixture, "Riverside/Drawings")
        try syncPinned(fixture)
        let section = try #require(try fixture.serverItem("Riverside/Drawings/section.txt"))
        #expect(contentRequests(fixture, section) == 1)

        // Another user adds a file and saves a new version of the other.
        let added = try fixture.serverFile("elevation.txt", "added on the server\n", in: "Riverside/Drawings")
        try serverEdit(fixture, "Riverside/Drawings/section.txt", to: "second\n")
        let edited = try #require(try fixture.serverItem("Riverside/Drawings/section.txt"))
        // The change feed brings both to the mount (metadata only: nothing opens them).
        try #require(try eventually(timeout: .seconds(15)) {
            try FileManager.default.fileExists(atPath: fixture.path("Riverside/Drawings/elevation.txt"))
                && attribute(fixture, "Riverside/Drawings/section.txt", "user.sitefs.version") == edited.etag
        }, "the change feed never brought the server's changes")
        try syncPinned(fixture)
        #expect(try attribute(fixture, "Riverside/Drawings/elevation.txt", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Drawings/section.txt", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Drawings/elevation.txt", "user.sitefs.pinned") == "folder")
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 2 of 2 files local ("), "\(shown)")
        #expect(contentRequests(fixture, added) == 1 && contentRequests(fixture, section) == 2, "one download each")
        #expect(localCopyContents(fixture) == ["added on the server\n", "second\n"])

        try goOffline(fixture)
        let read = try fixture.shell("cat Riverside/Drawings/elevation.txt Riverside/Drawings/section.txt")
        #expect(read.status == 0 && read.out == "added on the server\nsecond\n", "offline: \(read.err)")
    }

    @Test func pinsSurviveARemountAndAKilledDaemon() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "5"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        try fixture.serverFolder("Site", in: "Riverside")
        let diary = try fixture.serverFile("diary.txt", "day one\n", in: "Riverside/Site")
        let contacts = try fixture.serverFile("contacts.txt", "foreman: 0123\n", in: "Harbour Tower")
        try waitUntilShown(fixture, "Riverside/Site/diary.txt")
        try waitUntilShown(fixture, "Harbour Tower/contacts.txt")
        try pin(fixture, "Riverside/Site")
        try pin(fixture, "Harbour Tower/contacts.txt")
        try syncPinned(fixture)
        #expect(contentRequests(fixture, diary) == 1 && contentRequests(fixture, contacts) == 1)

        /// Offline after a mount: the pinned files read from what the last mount left, and
        /// were not downloaded again.
        func readsOfflineFromTheRestoredCopies(_ when: String) throws {
            try goOffline(fixture)
            let read = try fixture.shell("cat Riverside/Site/diary.txt 'Harbour Tower/contacts.txt'")
            #expect(read.status == 0 && read.out == "day one\nforeman: 0123\n", "\(when): \(read.err)")
            #expect(try attribute(fixture, "Riverside/Site/diary.txt", "user.sitefs.pinned") == "folder", "\(when)")
            #expect(try attribute(fixture, "Harbour Tower/contacts.txt", "user.sitefs.pinned") == "1", "\(when)")
            #expect(contentRequests(fixture, diary) == 1 && contentRequests(fixture, contacts) == 1, "\(when): downloaded again")
            #expect(!fixture.daemonLog.contains("is not what was recorded"), "\(when)")
            proxy.mode = .pass
        }

        // A clean unmount and a mount on the same cache dir.
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        #expect(!fixture.isMounted)
        try remount(fixture, ["--io-timeout", "5"])
        try readsOfflineFromTheRestoredCopies("after a remount")

        // kill -9 of the daemon, the dead mount taken down, and a mount again while the server
        // is unreachable: it starts offline, from what the last mount left.
        fixture.killDaemons()
        #expect(eventually(timeout: .seconds(10)) { fixture.daemons.isEmpty })
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        #expect(!fixture.isMounted)
        proxy.mode = .refuse
        try remount(fixture, ["--io-timeout", "5"])
        try readsOfflineFromTheRestoredCopies("after kill -9")

        // Back online, both still pinned and local.
        try syncPinned(fixture)
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 2 of 2 files local ("), "\(shown)")
        #expect(shown.contains("\n  pinned: Harbour Tower/contacts.txt\n  pinned: Riverside/Site\n"), "\(shown)")
    }

    @Test func unpinningLetsTheLocalCopiesGoAndTheAttributePinsAndUnpinsOneFile() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        try fixture.serverFolder("Specs", in: "Riverside")
        for name in ["one.txt", "two.txt", "three.txt"] { try fixture.serverFile(name, "spec \(name)\n", in: "Riverside/Specs") }
        for name in ["one.txt", "two.txt", "three.txt"] { try waitUntilShown(fixture, "Riverside/Specs/\(name)") }
        try pin(fixture, "Riverside/Specs")
        try syncPinned(fixture)
        #expect(fixture.localCopies.count == 3)

        let unpin = try fixture.sitefs(["unpin", fixture.path("Riverside/Specs")])
        #expect(unpin.status == 0 && unpin.out == "unpinned Riverside/Specs\n", "\(unpin)")
        #expect(eventually(timeout: .seconds(10)) { fixture.localCopies.isEmpty }, "left: \(fixture.localCopies)")
        for name in ["one.txt", "two.txt", "three.txt"] {
            #expect(try attribute(fixture, "Riverside/Specs/\(name)", "user.sitefs.state") == "online-only", "\(name)")
            #expect(try missingAttribute(fixture, "Riverside/Specs/\(name)", "user.sitefs.pinned"), "\(name)")
        }
        #expect(try missingAttribute(fixture, "Riverside/Specs", "user.sitefs.pinned"))
        #expect(showsNoPins(fixture))

        // setfattr pins one file, setfattr -x unpins it.
        let set = try fixture.shell("setfattr -n user.sitefs.pinned -v 1 Riverside/Specs/two.txt")
        #expect(set.status == 0, "setfattr: \(set.err)")
        #expect(try attribute(fixture, "Riverside/Specs/two.txt", "user.sitefs.pinned") == "1")
        try syncPinned(fixture)
        #expect(try attribute(fixture, "Riverside/Specs/two.txt", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Specs/one.txt", "user.sitefs.state") == "online-only")
        #expect(localCopyContents(fixture) == ["spec two.txt\n"])
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 1 of 1 files local (") && shown.contains("\n  pinned: Riverside/Specs/two.txt\n"), "\(shown)")

        let remove = try fixture.shell("setfattr -x user.sitefs.pinned Riverside/Specs/two.txt")
        #expect(remove.status == 0, "setfattr -x: \(remove.err)")
        #expect(try missingAttribute(fixture, "Riverside/Specs/two.txt", "user.sitefs.pinned"))
        #expect(eventually(timeout: .seconds(10)) { fixture.localCopies.isEmpty }, "left: \(fixture.localCopies)")
        #expect(try attribute(fixture, "Riverside/Specs/two.txt", "user.sitefs.state") == "online-only")
        #expect(showsNoPins(fixture))
    }

    @Test func pinningPastTheCacheBudgetIsRefused() throws {
        let fixture = try MountFixture(extraMountArguments: ["--cache-size", "64K"])
        defer { fixture.tearDown() }
        try fixture.serverFolder("Scans", in: "Riverside")
        for name in ["north.bin", "south.bin", "east.bin"] {  // 90 KiB together
            try fixture.serverFile(name, Data(repeating: UInt8(name.count), count: 30 * 1024), in: "Riverside/Scans")
        }
        try fixture.serverFile("small.txt", Data(repeating: UInt8(ascii: "s"), count: 10 * 1024), in: "Harbour Tower")
        for name in ["north.bin", "south.bin", "east.bin"] { try waitUntilShown(fixture, "Riverside/Scans/\(name)") }
        try waitUntilShown(fixture, "Harbour Tower/small.txt")

        let refused = try fixture.sitefs(["pin", fixture.path("Riverside/Scans")])
        #expect(refused.status != 0 && refused.err.contains("cache budget"), "\(refused)")
        #expect(try missingAttribute(fixture, "Riverside/Scans", "user.sitefs.pinned"))
        #expect(try attribute(fixture, "Riverside/Scans/north.bin", "user.sitefs.state") == "online-only")
        let setfattr = try fixture.shell("setfattr -n user.sitefs.pinned -v 1 Riverside/Scans")
        #expect(setfattr.status != 0, "setfattr past the budget: \(setfattr)")
        #expect(try missingAttribute(fixture, "Riverside/Scans", "user.sitefs.pinned"))
        #expect(showsNoPins(fixture))

        // What fits is pinned: 10 KiB, then 40 KiB; a second scan (70 KiB) is too much.
        try pin(fixture, "Harbour Tower/small.txt")
        try pin(fixture, "Riverside/Scans/north.bin")
        let second = try fixture.sitefs(["pin", fixture.path("Riverside/Scans/south.bin")])
        #expect(second.status != 0 && second.err.contains("cache budget"), "\(second)")
        try syncPinned(fixture)
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 2 of 2 files local (40.0 KiB of 40.0 KiB), cache budget 64.0 KiB\n"), "\(shown)")
        #expect(try attribute(fixture, "Riverside/Scans/north.bin", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Scans/south.bin", "user.sitefs.state") == "online-only")
        #expect(fixture.localCopies.count == 2)
    }

    @Test(.timeLimit(.minutes(2)))
    func aLargePinnedFolderDownloadsInTheBackgroundAndShowsItsProgress() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let folder = try fixture.serverFolder("Survey", in: "Riverside")
        // 1,000 small files through one kept-alive connection (a curl each would take longer).
        let script = """
            import http.client, sys
            port, parent, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
            token = sys.stdin.read().strip()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for index in range(count):
                connection.request("POST", f"/v1/items/{parent}/children?name=point-{index:04d}.txt",
                                   body=f"survey point {index}\\n".encode(),
                                   headers={"Authorization": "Bearer " + token, "Content-Type": "application/octet-stream"})
                response = connection.getresponse()
                body = response.read()
                if response.status != 201:
                    sys.exit(f"point {index}: {response.status} {body!r}")
            """
        let scriptFile = fixture.root.appendingPathComponent("points.py")
        try script.write(to: scriptFile, atomically: true, encoding: .utf8)
        let port = String(fixture.server.baseURL.split(separator: ":").last!)
        let made = try run(URL(fileURLWithPath: "/usr/bin/python3"), [scriptFile.path, port, folder.id, "1000"],
                           stdin: fixture.api.token, timeout: 60)
        try #require(made.status == 0, "creating 1,000 files: \(made.err)")
        let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) })
        var big = Data(capacity: 64 << 20)
        for index in 0..<64 {
            big.append(block)
            big[big.count - 1] = UInt8(index)
        }
        try fixture.serverFile("scan.bin", big, in: "Riverside/Survey")
        try waitUntilShown(fixture, "Riverside/Survey/scan.bin")
        try #require(try eventually(timeout: .seconds(15)) {
            try FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside/Survey")).count == 1001
        })

        let started = Date()
        try pin(fixture, "Riverside/Survey")
        // While it downloads, the status says how far it got.
        var progress = ""
        let sawProgress = try eventually(timeout: .seconds(30), every: .milliseconds(10)) {
            let shown = status(fixture)
            guard let line = shown.split(separator: "\n").first(where: { $0.hasPrefix("pinned: ") && $0.contains(" of 1001 files local") })
            else { return false }
            let local = Int(line.dropFirst("pinned: ".count).prefix { $0.isNumber }) ?? -1
            if (0..<1001).contains(local) || shown.contains("\n  downloading: Riverside/Survey/") {
                progress = shown
                return true
            }
            return false
        }
        #expect(sawProgress, "no progress seen; last status: \(status(fixture))")
        #expect(try fixture.sitefs(["status", fixture.mountpoint.path]).status == 0)
        try syncPinned(fixture, timeout: 60)
        let took = Date().timeIntervalSince(started)
        let shown = status(fixture)
        #expect(shown.contains("\npinned: 1001 of 1001 files local ("), "\(shown)")
        #expect(!shown.contains("downloading:") && !shown.contains("not local:"), "\(shown)")
        #expect(fixture.localCopies.count == 1001)
        #expect(try attribute(fixture, "Riverside/Survey/scan.bin", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Survey/point-0999.txt", "user.sitefs.state") == "downloaded")
        #expect(try attribute(fixture, "Riverside/Survey", "user.sitefs.state") == "downloaded")
        print("1,001 pinned files (64 MiB) local in \(String(format: "%.1f", took)) s; progress seen: \(progress.split(separator: "\n").filter { $0.contains("pinned: ") || $0.contains("downloading") }.prefix(2))")
    }
}
