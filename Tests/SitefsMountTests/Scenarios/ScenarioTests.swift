import Foundation
import SitefsDemoContent
import SitefsTestSupport
import Testing

/// The File Provider behaviour, the same scenario on every server (`ScenarioBackend`): the
/// project's own and three WebDAV servers nobody here wrote. Each acts through ordinary tools
/// on a real mount and checks the server through its own means (API or disk).
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct ScenarioTests {
    static let backends = ScenarioBackend.allCases

    @Test(arguments: backends)
    func sitesAtTheRootAndPlaceholdersDownloadedOnOpen(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.makeFolder("Harbour Tower/Plans")
            try server.write("Harbour Tower/Plans/level1.txt", "level 1\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls").out == "Harbour Tower\nRiverside\n")
        #expect(try mount.shell("stat -c '%s %F' 'Harbour Tower/Plans/level1.txt'").out == "8 regular file\n")
        #expect(mount.localCopies.isEmpty, "listed, not downloaded")
        #expect(try mount.shell("cat 'Harbour Tower/Plans/level1.txt'").out == "level 1\n")
        // Nothing can be made at the root: it shows the server's sites.
        #expect(try mount.shell("mkdir 'New site'").status != 0)
    }

    /// WebDAV only: the project's server has nothing but sites at its root.
    @Test(arguments: [ScenarioBackend.apache, .nginx, .wsgidav])
    func filesBesideTheSitesAreShownAndEditedButStayPut(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { try $0.write("read me.txt", "about these sites\n") }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls").out == "Harbour Tower\nRiverside\nread me.txt\n")
        #expect(try mount.shell("echo 'one more line' >> 'read me.txt'").status == 0)
        try mount.sync()
        #expect(try mount.server.text("read me.txt") == "about these sites\none more line\n")
        #expect(try mount.shell("mv 'read me.txt' 'Harbour Tower/'").status != 0)
        #expect(try mount.shell("rm 'read me.txt'").status != 0)
        #expect(try mount.server.text("read me.txt") == "about these sites\none more line\n")
    }

    @Test(arguments: backends)
    func aPartialReadOfALargeFileFetchesARangeAndAFullReadIsExact(_ backend: ScenarioBackend) throws {
        let big = FileManager.default.temporaryDirectory.appendingPathComponent("scenario-big-\(UUID().uuidString)")
        _ = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "head -c 50331648 /dev/urandom > '\(big.path)'"])
        defer { try? FileManager.default.removeItem(at: big) }
        let mount = try ScenarioMount(backend) { try $0.write("Harbour Tower/big.bin", try Data(contentsOf: big)) }
        defer { mount.tearDown() }
        let slice = try mount.shell("dd if='Harbour Tower/big.bin' bs=65536 skip=600 count=1 status=none | sha256sum")
        let expected = try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "dd if='\(big.path)' bs=65536 skip=600 count=1 status=none | sha256sum"])
        #expect(slice.out == expected.out && !slice.out.isEmpty)
        #expect(mount.localCopies.isEmpty, "a partial read keeps no whole copy")
        #expect(try mount.shell("cmp 'Harbour Tower/big.bin' '\(big.path)' && echo same").out == "same\n")
    }

    @Test(arguments: backends)
    func writeCloseAndSyncPutTheContentOnTheServer(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { try $0.write("Riverside/log.txt", "day 1\n") }
        defer { mount.tearDown() }
        #expect(try mount.shell("echo 'first draft' > Riverside/report.txt && echo 'day 2' >> Riverside/log.txt").status == 0)
        try mount.sync()
        #expect(try mount.server.text("Riverside/report.txt") == "first draft\n")
        #expect(try mount.server.text("Riverside/log.txt") == "day 1\nday 2\n")
        // Overwrite the middle in place, then truncate.
        #expect(try mount.shell("printf XX | dd of=Riverside/report.txt bs=1 seek=2 conv=notrunc status=none").status == 0)
        try mount.sync()
        #expect(try mount.server.text("Riverside/report.txt") == "fiXXt draft\n")
        #expect(try mount.shell("truncate -s 4 Riverside/report.txt").status == 0)
        try mount.sync()
        #expect(try mount.server.text("Riverside/report.txt") == "fiXX")
        #expect(eventually(timeout: .seconds(10)) { mount.localCopies.isEmpty }, "copies are cleaned up once uploaded")
    }

    @Test(arguments: backends)
    func namespaceOperationsReachTheServer(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.makeFolder("Harbour Tower/Plans")
            try server.write("Harbour Tower/Plans/a.txt", "a\n")
        }
        defer { mount.tearDown() }
        let script = """
            mkdir -p 'Harbour Tower/Sections/Level 1' && echo b > 'Harbour Tower/Sections/Level 1/b.txt' && \
            mv 'Harbour Tower/Plans/a.txt' 'Harbour Tower/Sections/a moved é.txt' && \
            mv 'Harbour Tower/Sections' 'Harbour Tower/Parts' && \
            echo gone > 'Harbour Tower/scratch.txt' && rm 'Harbour Tower/scratch.txt' && rmdir 'Harbour Tower/Plans' && \
            cp 'Harbour Tower/Parts/Level 1/b.txt' 'Riverside/b copy.txt'
            """
        let result = try mount.shell(script)
        try #require(result.status == 0, "\(result.err)")
        try mount.sync()
        #expect(try mount.server.names(in: "Harbour Tower") == ["Parts"])
        #expect(try mount.server.names(in: "Harbour Tower/Parts") == ["Level 1", "a moved é.txt"])
        #expect(try mount.server.text("Harbour Tower/Parts/a moved é.txt") == "a\n")
        #expect(try mount.server.text("Harbour Tower/Parts/Level 1/b.txt") == "b\n")
        #expect(try mount.server.text("Riverside/b copy.txt") == "b\n")
        // Moving between sites is a copy and a delete (EXDEV), as between filesystems.
        #expect(try mount.shell("mv 'Riverside/b copy.txt' 'Harbour Tower/Parts/'").status == 0)
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/Parts/b copy.txt") == "b\n")
        #expect(try mount.server.read("Riverside/b copy.txt") == nil)
        #expect(try mount.shell("rm -r 'Harbour Tower/Parts'").status == 0)
        try mount.sync()
        #expect(try mount.server.names(in: "Harbour Tower").isEmpty)
    }

    @Test(arguments: backends)
    func changesMadeOnTheServerAppearWithoutARemount(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.write("Riverside/plan.txt", "v1\n")
            try server.write("Riverside/old.txt", "old\n")
            try server.write("Riverside/draft.txt", "draft\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("cat Riverside/plan.txt && ls Riverside").out == "v1\ndraft.txt\nold.txt\nplan.txt\n")
        try mount.server.write("Riverside/plan.txt", "version two\n")
        try mount.server.write("Riverside/new.txt", "new\n")
        try mount.server.remove("Riverside/old.txt")
        try mount.server.rename("Riverside/draft.txt", to: "final.txt")
        // Listings and metadata are revalidated after --cache-ttl, the kernel's after 5 s.
        let expected = "final.txt\nnew.txt\nplan.txt\nversion two\ndraft\n"
        #expect(eventually(timeout: .seconds(20), every: .milliseconds(250)) {
            (try? mount.shell("ls Riverside && cat Riverside/plan.txt Riverside/final.txt").out) == expected
        }, "the mount shows: \((try? mount.shell("ls Riverside; cat Riverside/plan.txt").out) ?? "")")
    }

    @Test(arguments: backends)
    func aSaveOverAnEditMadeOnTheServerMeanwhileKeepsBoth(_ backend: ScenarioBackend) throws {
        // Edited there while open here: writers are not locked, as on a server without locks
        // (EditingLockMountTests has what a lock does to this).
        let mount = try ScenarioMount(backend, extraMountArguments: ["--no-lock-writers"]) { try $0.write("Riverside/plan.txt", "original\n") }
        defer { mount.tearDown() }
        try editWhileOpen(mount.path("Riverside/plan.txt"), to: "mine\n") {
            // Another client's save, a second later (a server whose versions are times must see a new one).
            Thread.sleep(forTimeInterval: 1.1)
            try mount.server.write("Riverside/plan.txt", "theirs, longer\n")
        }
        try mount.sync()
        #expect(try mount.server.text("Riverside/plan.txt") == "theirs, longer\n")
        let copies = try mount.server.names(in: "Riverside").filter { $0.hasPrefix("plan (conflict ") }
        let names = try mount.server.names(in: "Riverside")
        try #require(copies.count == 1, "names: \(names)\n\(mount.daemonLog.suffix(3000))")
        #expect(try mount.server.text("Riverside/\(copies[0])") == "mine\n")
    }

    @Test(arguments: backends)
    func aSaveSurvivesKillDashNineAndARemount(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend, extraMountArguments: ["--write-back-delay", "30", "--new-file-delay", "30"])
        defer { mount.tearDown() }
        #expect(try mount.shell("echo 'saved before the crash' > 'Harbour Tower/minutes.txt' && sync").status == 0)
        mount.killDaemon()
        #expect(try mount.server.read("Harbour Tower/minutes.txt") == nil, "still waiting when killed")
        try mount.mount()
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/minutes.txt") == "saved before the crash\n")
    }

    @Test(arguments: backends)
    func aSaveWhileTheServerIsDownArrivesWhenItIsBack(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend, throughFaultProxy: true) { try $0.write("Riverside/notes.txt", "before\n") }
        defer { mount.tearDown() }
        let proxy = try #require(mount.proxy)
        #expect(try mount.shell("cat Riverside/notes.txt").out == "before\n")
        proxy.mode = .refuse
        #expect(try mount.shell("echo 'written offline' > Riverside/notes.txt").status == 0)
        let waiting = try mount.sitefs(["sync", mount.mountpoint.path, "--timeout", "3"])
        #expect(waiting.status != 0, "sync cannot finish while the server is away")
        #expect(try mount.server.text("Riverside/notes.txt") == "before\n")
        proxy.mode = .pass
        try mount.sync()
        #expect(try mount.server.text("Riverside/notes.txt") == "written offline\n")
    }

    @Test(arguments: backends)
    func sedAndVimSaveInPlace(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { try $0.write("Harbour Tower/notes.txt", "line one\n") }
        defer { mount.tearDown() }
        var result = try mount.shell("sed -i 's/one/two/' 'Harbour Tower/notes.txt'")
        try #require(result.status == 0, "sed: \(result.err)")
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/notes.txt") == "line two\n")
        result = try mount.shell("vim -u NONE -N -i NONE -es -c '%s/two/three/' -c 'wq' 'Harbour Tower/notes.txt'")
        try #require(result.status == 0, "vim: \(result.out) \(result.err)")
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/notes.txt") == "line three\n")
        // No backup, swap or temp file reached the server.
        #expect(try mount.server.names(in: "Harbour Tower") == ["notes.txt"])
    }

    @Test(arguments: backends)
    func rsyncTwiceTransfersNothingTheSecondTime(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend)
        defer { mount.tearDown() }
        let tree = mount.root.appendingPathComponent("tree")
        let make = """
            mkdir -p '\(tree.path)/plans/level 1' '\(tree.path)/forms' && \
            for i in 1 2 3; do echo "plan $i" > '\(tree.path)/plans/level 1/plan-'$i.txt; done && \
            head -c 300000 /dev/urandom > '\(tree.path)/forms/scan.pdf' && \
            touch -d '2024-03-01 12:00:00' '\(tree.path)/forms/scan.pdf'
            """
        try #require(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", make]).status == 0)
        var result = try mount.shell("rsync -a '\(tree.path)/' 'Riverside/synced/'")
        try #require(result.status == 0, "rsync: \(result.err)")
        try mount.sync()
        #expect(try mount.server.text("Riverside/synced/plans/level 1/plan-2.txt") == "plan 2\n")
        #expect(try mount.server.read("Riverside/synced/forms/scan.pdf") == (try Data(contentsOf: tree.appendingPathComponent("forms/scan.pdf"))))
        result = try mount.shell("rsync -a --itemize-changes '\(tree.path)/' 'Riverside/synced/'")
        #expect(result.status == 0 && result.out.isEmpty, "second rsync: \(result.out) \(result.err)")
    }

    @Test(arguments: backends)
    func gitCloneCommitAndFsckWork(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend)
        defer { mount.tearDown() }
        let source = mount.root.appendingPathComponent("source-repo")
        let setup = """
            git init -q '\(source.path)' && cd '\(source.path)' && \
            git config user.email t@example.com && git config user.name Tester && \
            echo '# Site docs' > README.md && mkdir docs && echo 'v1' > docs/plan.txt && \
            git add . && git commit -q -m first
            """
        try #require(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", setup]).status == 0)
        let git = "git -c user.email=t@example.com -c user.name=Tester -c core.fsync=none"
        var result = try mount.shell("\(git) clone -q '\(source.path)' 'Harbour Tower/repo'", timeout: 120)
        try #require(result.status == 0, "git clone: \(result.err)")
        result = try mount.shell("cd 'Harbour Tower/repo' && echo v2 >> docs/plan.txt && \(git) commit -q -am second && \(git) status --porcelain && \(git) fsck --strict 2>&1 && \(git) log --oneline | wc -l", timeout: 120)
        #expect(result.status == 0, "git: \(result.err)\nlog: \(mount.daemonLog.suffix(3000))")
        #expect(result.out.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "a clean status and two commits: \(result.out)")
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/repo/docs/plan.txt") == "v1\nv2\n")
        #expect(try mount.server.read("Harbour Tower/repo/.git/index.lock") == nil)
    }

    @Test(arguments: backends)
    func libreOfficeSavesDocumentsInPlace(_ backend: ScenarioBackend) throws {
        let python = URL(fileURLWithPath: "/usr/bin/python3")
        let probe = try run(python, ["-c", "import uno"])
        try #require(probe.status == 0 && FileManager.default.fileExists(atPath: "/usr/bin/soffice"),
                     "LibreOffice with python3-uno is needed (scripts/test installs it)")
        let text = OfficeDocuments.odt(title: "Site diary", paragraphs: ["Concrete poured."])
        let sheet = OfficeDocuments.xlsx(sheetName: "Deliveries", rows: [["Item", "Count"], ["Rebar", "12"]])
        let mount = try ScenarioMount(backend) { server in
            try server.write("Harbour Tower/Site diary.odt", Data(text))
            try server.write("Harbour Tower/Deliveries.xlsx", Data(sheet))
        }
        defer { mount.tearDown() }
        let script = mount.root.appendingPathComponent("edit.py")
        try EditorTests.unoScript.write(to: script, atomically: true, encoding: .utf8)
        let home = try PrivateHome(in: mount.root.appendingPathComponent("lo-home"))
        let result = try run(python, [script.path, mount.root.appendingPathComponent("lo-profile").path,
                                      mount.path("Harbour Tower/Site diary.odt"), mount.path("Harbour Tower/Deliveries.xlsx")],
                             timeout: 240, environment: home.environment)
        try #require(result.status == 0, "LibreOffice: \(result.out)\n\(result.err)")
        try mount.sync()
        #expect(try mount.server.read("Harbour Tower/Site diary.odt") != Data(text))
        #expect(try mount.server.read("Harbour Tower/Deliveries.xlsx") != Data(sheet))
        let unzipped = try run(python, ["-c", "import zipfile,sys; print(zipfile.ZipFile(sys.argv[1]).read('content.xml').decode())",
                                        mount.path("Harbour Tower/Site diary.odt")])
        #expect(unzipped.out.contains("edited through sitefs"))
        // Lock files and LibreOffice's temp files stayed local.
        #expect(try mount.server.names(in: "Harbour Tower") == ["Deliveries.xlsx", "Site diary.odt"])
    }
}
