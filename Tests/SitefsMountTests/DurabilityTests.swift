import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Issue "no edit is ever lost": the journal survives kill -9, conflicts keep both versions,
/// deletions on the server do not swallow an edit, uploads wait for a new sign-in.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountDurabilityTests {
    private func edit(_ path: String, to text: String, between: () throws -> Void) throws {
        try editWhileOpen(path, to: text, between: between)
    }

    /// Files open for writing are not locked here: another client's edit meanwhile is what
    /// a server without locks (or a client ignoring them) lets happen.
    @Test func aConflictingSaveIsKeptNextToTheServerVersion() throws {
        let fixture = try MountFixture(extraMountArguments: ["--no-lock-writers"])
        defer { fixture.tearDown() }
        try "original".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let item = try #require(try fixture.serverItem("Riverside/plan.txt"))
        try edit(fixture.path("Riverside/plan.txt"), to: "mine") {
            _ = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", "theirs"])
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/plan.txt") == "theirs")
        let site = try #require(try fixture.serverItem("Riverside"))
        let copy = try #require(try fixture.children(site.id).first { $0.name.hasPrefix("plan (conflict ") })
        #expect(copy.name.hasSuffix(" anna).txt"))
        #expect(try fixture.serverContent("Riverside/\(copy.name)") == "mine")
        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.out.contains("conflict: plan.txt"))
        #expect(eventually(timeout: .seconds(10)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside")))?.contains(copy.name) == true
        })
    }

    @Test func anEditOfAFileDeletedOnTheServerIsCreatedAgain() throws {
        let fixture = try MountFixture(extraMountArguments: ["--no-lock-writers"])  // deleted elsewhere while open here
        defer { fixture.tearDown() }
        try "draft".write(toFile: fixture.path("Riverside/notes.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let item = try #require(try fixture.serverItem("Riverside/notes.txt"))
        try edit(fixture.path("Riverside/notes.txt"), to: "final") {
            _ = try fixture.api.call("DELETE", "/v1/items/\(item.id)")
            // The mount has heard of the deletion (its long-poll) before the open file is
            // truncated and written: the handle still works, as an unlinked file's does.
            #expect(eventually(timeout: .seconds(15)) { !FileManager.default.fileExists(atPath: fixture.path("Riverside/notes.txt")) })
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/notes.txt") == "final")
    }

    @Test func uploadsWaitForANewSignInAndThenResume() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        try "v1".write(toFile: fixture.path("Riverside/report.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let credentials = try JSONDecoder().decode([String: [String: String]].self, from: Data(contentsOf:
            fixture.root.appendingPathComponent("config/sitefs/credentials.json")))
        _ = try Curl(baseURL: fixture.server.baseURL, token: credentials[fixture.server.baseURL]?["token"]).call("DELETE", "/v1/session")
        try "v2".write(toFile: fixture.path("Riverside/report.txt"), atomically: false, encoding: .utf8)
        #expect(eventually(timeout: .seconds(15)) {
            (try? fixture.sitefs(["status", fixture.mountpoint.path]).out.contains("sign-in required")) == true
        })
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "1"]).status != 0)
        #expect(try fixture.sitefs(["login", fixture.server.baseURL, "--user", "anna"], stdin: MountFixture.password + "\n").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        #expect(try fixture.serverContent("Riverside/report.txt") == "v2")
    }

    @Test func aSaveSurvivesKillingTheDaemonWhileTheServerIsDown() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2"])
        defer { fixture.tearDown() }
        try "v1".write(toFile: fixture.path("Riverside/site-diary.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        fixture.server.stop()
        // Saved while the server is unreachable: journaled before close() returns.
        let save = try fixture.shell("echo 'v2 offline' > Riverside/site-diary.txt")
        #expect(save.status == 0, "\(save.err)")
        fixture.killDaemons()
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)  // works on the dead mount
        #expect(!fixture.isMounted)

        let server = try ServerProcess(dataDirectory: fixture.data)
        defer { server.stop() }
        #expect(try fixture.sitefs(["login", server.baseURL, "--user", "anna"], stdin: MountFixture.password + "\n").status == 0)
        let mount = try fixture.sitefs(["mount", server.baseURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path])
        #expect(mount.status == 0, "\(mount.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        var client = Curl(baseURL: server.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"\#(MountFixture.password)"}"#)
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        let sites = try JSONDecoder().decode(ItemPage.self, from: Data(client.call("GET", "/v1/sites").body.utf8)).items
        let riverside = try #require(sites.first { $0.name == "Riverside" })
        let children = try JSONDecoder().decode(ItemPage.self, from: Data(client.call("GET", "/v1/items/\(riverside.id)/children").body.utf8)).items
        let diary = try #require(children.first { $0.name == "site-diary.txt" })
        #expect(try client.call("GET", "/v1/items/\(diary.id)/content").body == "v2 offline\n")
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
    }
}

/// Network faults between the daemon and the server, through the fault-injecting proxy.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct MountFaultTests {
    @Test func savesAreRetriedThroughServerErrorsRefusalsAndResets() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "3"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        try "created\n".write(toFile: fixture.path("Riverside/log.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        for (index, fault) in [FaultProxy.Mode.respond(status: 503, headers: [], body: "busy"),
                               .respond(status: 429, headers: [("Retry-After", "1")], body: "slow down"),
                               .refuse, .resetAfter(bytes: 10)].enumerated() {
            proxy.injectOnce(fault, times: 2)
            let text = "version \(index) after a fault\n"
            try text.write(toFile: fixture.path("Riverside/log.txt"), atomically: false, encoding: .utf8)
            let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"])
            #expect(sync.status == 0, "fault \(fault): \(sync.err)")
            #expect(try fixture.serverContent("Riverside/log.txt") == text, "fault \(fault)")
        }
        #expect(proxy.faultsInjected >= 8)
        #expect(fixture.daemonLog.contains("will be retried"))
        // A reset after the server stored an upload is recognised as success, not a conflict.
        let site = try #require(try fixture.serverItem("Riverside"))
        #expect(try fixture.children(site.id).map(\.name) == ["log.txt"])
    }

    @Test func aStalledServerGivesEIOWithinTheTimeoutNotAHang() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        try "content".write(toFile: fixture.path("Riverside/f.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        try #require(fixture.proxy).mode = .blackhole
        let started = Date()
        let read = try fixture.shell("cat Riverside/f.txt", timeout: 60)
        #expect(read.status != 0 && (read.err.contains("Input/output error") || read.err.contains("Network is unreachable")), "\(read)")
        #expect(Date().timeIntervalSince(started) < 30)
    }

    @Test func offlineSavesOfNewFilesAndEditorSavesAreReplayedWhenTheServerReturns() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2", "--write-back-delay", "0.5"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        try "version 1\n".write(toFile: fixture.path("Riverside/report.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let original = try #require(try fixture.serverItem("Riverside/report.txt"))
        _ = try fixture.shell("ls -l Riverside")  // the folder is known

        proxy.mode = .refuse  // the server is unreachable from here on
        let offline = try fixture.shell("""
            echo 'written offline' > Riverside/new.txt && \
            printf 'version 2\\n' > Riverside/.report.tmp && mv Riverside/.report.tmp Riverside/report.txt && \
            mv Riverside/new.txt Riverside/renamed.txt && cat Riverside/renamed.txt Riverside/report.txt
            """)
        #expect(offline.status == 0, "saving offline: \(offline.err)")
        #expect(offline.out == "written offline\nversion 2\n")
        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.out.contains("pending uploads: 2"), "\(status.out)")
        // Folders too: made here now, filled, and sent with the rest.
        let mkdir = try fixture.shell("mkdir -p 'Riverside/made offline/inner' && echo inside > 'Riverside/made offline/inner/note.txt'")
        #expect(mkdir.status == 0, "mkdir offline: \(mkdir.err)")
        #expect(try fixture.shell("cat 'Riverside/made offline/inner/note.txt'").out == "inside\n")
        #expect(try fixture.sitefs(["status", fixture.mountpoint.path]).out.contains("offline since"))
        #expect(try fixture.serverContent("Riverside/report.txt") == "version 1\n")

        proxy.mode = .pass  // back
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "90"])
        #expect(sync.status == 0, "\(sync.err)")
        #expect(try fixture.serverItem("Riverside/report.txt")?.id == original.id)
        #expect(try fixture.serverContent("Riverside/report.txt") == "version 2\n")
        #expect(try fixture.serverContent("Riverside/renamed.txt") == "written offline\n")
        let site = try #require(try fixture.serverItem("Riverside"))
        #expect(try fixture.children(site.id).map(\.name).sorted() == ["made offline", "renamed.txt", "report.txt"])
        #expect(try fixture.serverContent("Riverside/made offline/inner/note.txt") == "inside\n")
    }

    @Test func anOfflineSessionSurvivesKillAndARemountWhileStillOffline() throws {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2", "--write-back-delay", "0.5"], throughFaultProxy: true)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        try "keep me\n".write(toFile: fixture.path("Riverside/old.txt"), atomically: false, encoding: .utf8)
        try "bye\n".write(toFile: fixture.path("Riverside/doomed.txt"), atomically: false, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: fixture.path("Riverside/Empty"), withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: fixture.path("Riverside/Drafts"), withIntermediateDirectories: false)
        try "draft\n".write(toFile: fixture.path("Riverside/Drafts/d.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let drafts = try #require(try fixture.serverItem("Riverside/Drafts"))
        _ = try fixture.shell("ls -l Riverside")
        // Mounted this morning: what it knew is on disk (a kill within a fraction of a second
        // of a listing may lose that listing from the metadata cache, which costs a cold start).
        let mountArguments = ["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                              "--io-timeout", "2", "--poll-interval", "0.3", "--write-back-delay", "0.5", "--log-level", "debug"]
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.sitefs(mountArguments).status == 0)

        proxy.mode = .refuse
        let offline = try fixture.shell("""
            mkdir -p 'Riverside/Week 48/photos' && echo 'slab poured' > 'Riverside/Week 48/diary.txt' &&             echo 'east wall' > 'Riverside/Week 48/photos/list.txt' && rm Riverside/doomed.txt &&             mv Riverside/old.txt 'Riverside/Week 48/old.txt' && rmdir Riverside/Empty && mv Riverside/Drafts 'Riverside/Week 48/Drafts'
            """)
        #expect(offline.status == 0, "\(offline.err)")
        fixture.killDaemons()
        #expect(try fixture.sitefs(["unmount", fixture.mountpoint.path]).status == 0)
        // Still offline: the mount starts from its cache and shows the session as it was left.
        let mount = try fixture.sitefs(mountArguments)
        #expect(mount.status == 0, "mounting offline: \(mount.err)")
        let shown = try fixture.shell("cd Riverside && find . -type f | sort && cat 'Week 48/diary.txt'")
        #expect(shown.out == "./Week 48/Drafts/d.txt\n./Week 48/diary.txt\n./Week 48/old.txt\n./Week 48/photos/list.txt\nslab poured\n",
                "\(shown)")
        #expect(try fixture.shell("ls Riverside").out == "Week 48\n")
        #expect(try fixture.serverItem("Riverside/Week 48") == nil)
        #expect(try fixture.serverItem("Riverside/doomed.txt") != nil)

        proxy.mode = .pass
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "90"])
        #expect(sync.status == 0, "\(sync.err)")
        #expect(try fixture.serverContent("Riverside/Week 48/diary.txt") == "slab poured\n")
        #expect(try fixture.serverContent("Riverside/Week 48/photos/list.txt") == "east wall\n")
        #expect(try fixture.serverContent("Riverside/Week 48/old.txt") == "keep me\n")
        #expect(try fixture.serverItem("Riverside/doomed.txt") == nil)
        #expect(try fixture.serverItem("Riverside/old.txt") == nil)
        #expect(try fixture.serverItem("Riverside/Empty") == nil)
        #expect(try fixture.serverItem("Riverside/Week 48/Drafts")?.id == drafts.id, "moved, not copied")
        #expect(try fixture.serverContent("Riverside/Week 48/Drafts/d.txt") == "draft\n")
    }
}
