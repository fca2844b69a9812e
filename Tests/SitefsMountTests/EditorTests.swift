import Foundation
import SitefsAPI
import SitefsDemoContent
import SitefsTestSupport
import Testing

/// Real editors and shell tools on a real mount: every save ends as exactly one new version
/// of the same server item, and lock, swap and temp files never reach the server.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct EditorTests {
    /// A file put on the server through the API (as another user's upload would be).
    private func serverFile(_ fixture: MountFixture, _ name: String, _ bytes: [UInt8], in folder: String = "Harbour Tower") throws -> Item {
        let parent = try #require(try fixture.serverItem(folder))
        let local = fixture.root.appendingPathComponent("upload-\(UUID().uuidString)")
        try Data(bytes).write(to: local)
        let created = try fixture.api.call("POST", "/v1/items/\(parent.id)/children?name=\(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: ".-_")))!)",
                                           extra: ["-H", "Expect:", "--data-binary", "@\(local.path)"])
        try #require(created.status == 201, "create \(name): \(created.status) \(created.body)")
        return try JSONDecoder().decode(Item.self, from: Data(created.body.utf8))
    }

    private func versions(_ fixture: MountFixture, _ item: Item) throws -> [Version] {
        try JSONDecoder().decode(VersionList.self, from: Data(fixture.api.call("GET", "/v1/items/\(item.id)/versions").body.utf8)).versions
    }

    private func sync(_ fixture: MountFixture) throws {
        let result = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"])
        try #require(result.status == 0, "sitefs sync: \(result.err)")
    }

    /// Names in a server folder (through the API).
    private func serverNames(_ fixture: MountFixture, _ folder: String = "Harbour Tower") throws -> [String] {
        try fixture.children(try #require(try fixture.serverItem(folder)).id).map(\.name).sorted()
    }

    @Test func sedVimAndTempFileRenameEachMakeOneNewVersionOfTheSameItem() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let original = try serverFile(fixture, "notes.txt", Array("line one\n".utf8))
        let path = "Harbour Tower/notes.txt"

        // sed -i: writes a temp file in the folder and renames it over the original.
        var result = try fixture.shell("sed -i 's/one/two/' '\(path)'")
        try #require(result.status == 0, "sed: \(result.err)")
        try sync(fixture)
        #expect(try fixture.serverItem(path)?.id == original.id)
        #expect(try fixture.serverContent(path) == "line two\n")
        #expect(try versions(fixture, original).count == 2)

        // vim: with 'nocompatible' it renames the original to notes.txt~, writes a new
        // notes.txt and deletes the backup; its swap file and 4913 probe stay local.
        result = try fixture.shell("vim -u NONE -N -i NONE -es -c '%s/two/three/' -c 'wq' '\(path)'")
        try #require(result.status == 0, "vim: \(result.out) \(result.err)")
        try sync(fixture)
        #expect(try fixture.serverItem(path)?.id == original.id)
        #expect(try fixture.serverContent(path) == "line three\n")
        #expect(try versions(fixture, original).count == 3)

        // gedit-style: a temp file written, fsynced and renamed over the original.
        let script = """
            import os, sys
            folder, name = sys.argv[1], sys.argv[2]
            temp = os.path.join(folder, ".goutputstream-ABC123")
            with open(temp, "w") as f:
                f.write("line four\\n")
                f.flush()
                os.fsync(f.fileno())
            os.rename(temp, os.path.join(folder, name))
            """
        let saver = fixture.root.appendingPathComponent("save.py")
        try script.write(to: saver, atomically: true, encoding: .utf8)
        result = try run(URL(fileURLWithPath: "/usr/bin/python3"), [saver.path, fixture.path("Harbour Tower"), "notes.txt"])
        try #require(result.status == 0, "temp + rename: \(result.err)")
        try sync(fixture)
        #expect(try fixture.serverItem(path)?.id == original.id)
        #expect(try fixture.serverContent(path) == "line four\n")
        #expect(try versions(fixture, original).count == 4)
        // Nothing else reached the server: no backup, swap, probe or temp file.
        #expect(try serverNames(fixture) == ["notes.txt"])
        #expect(try fixture.shell("ls -A 'Harbour Tower'").out == "notes.txt\n")
        // Its state and id as extended attributes.
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.id '\(path)'").out == original.id)
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state '\(path)'").out == "online-only")
        let refused = try fixture.shell("setfattr -n user.color -v red '\(path)'")
        #expect(refused.status != 0 && refused.err.contains("not supported"), "\(refused.err)")
    }

    @Test func aNewFileIsUploadedOnceAfterTheSettleDelayAndADeletedOneNever() throws {
        let fixture = try MountFixture(extraMountArguments: ["--write-back-delay", "1.5", "--new-file-delay", "1.5"])
        defer { fixture.tearDown() }
        let posts = { fixture.server.log.components(separatedBy: "POST /v1/items/").count - 1 }
        let before = posts()
        _ = try fixture.shell("echo draft > 'Harbour Tower/plan.txt' && echo scratch > 'Harbour Tower/scratch.txt' && rm 'Harbour Tower/scratch.txt'")
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state 'Harbour Tower/plan.txt'").out == "pending")
        #expect(try fixture.serverItem("Harbour Tower/plan.txt") == nil)  // still settling
        #expect(try eventually(timeout: .seconds(20)) { try fixture.serverContent("Harbour Tower/plan.txt") == "draft\n" })
        #expect(posts() - before == 1, "one POST for plan.txt, none for scratch.txt")
        #expect(try serverNames(fixture) == ["plan.txt"])
    }

    @Test func libreOfficeSavesDocumentsInPlaceAsNewVersions() throws {
        let python = URL(fileURLWithPath: "/usr/bin/python3")
        let probe = try run(python, ["-c", "import uno"])
        try #require(probe.status == 0 && FileManager.default.fileExists(atPath: "/usr/bin/soffice"),
                     "LibreOffice with python3-uno is needed (scripts/test installs it)")
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let text = try serverFile(fixture, "Site diary.odt", OfficeDocuments.odt(title: "Site diary", paragraphs: ["Concrete poured."]))
        let sheet = try serverFile(fixture, "Deliveries.xlsx", OfficeDocuments.xlsx(sheetName: "Deliveries", rows: [["Item", "Count"], ["Rebar", "12"]]))

        let script = fixture.root.appendingPathComponent("edit.py")
        try Self.unoScript.write(to: script, atomically: true, encoding: .utf8)
        let profile = fixture.root.appendingPathComponent("lo-profile")
        let home = try PrivateHome(in: fixture.root.appendingPathComponent("lo-home"))
        let result = try run(python, [script.path, profile.path, fixture.path("Harbour Tower/Site diary.odt"),
                                      fixture.path("Harbour Tower/Deliveries.xlsx")], timeout: 240, environment: home.environment)
        try #require(result.status == 0, "LibreOffice: \(result.out)\n\(result.err)")
        #expect(result.out.contains("reopened without a modified flag"), "\(result.out)")
        try sync(fixture)

        for (item, path) in [(text, "Harbour Tower/Site diary.odt"), (sheet, "Harbour Tower/Deliveries.xlsx")] {
            let now = try #require(try fixture.serverItem(path))
            #expect(now.id == item.id, "\(path) kept its id")
            #expect(now.etag != item.etag, "\(path) has a new version")
            #expect(try versions(fixture, item).count == 2, "\(path): exactly one new version")
        }
        // The new content, read back through the mount from a fresh download.
        let unzipped = try run(python, ["-c", "import zipfile,sys; print(zipfile.ZipFile(sys.argv[1]).read('content.xml').decode())",
                                        fixture.path("Harbour Tower/Site diary.odt")])
        #expect(unzipped.out.contains("edited through sitefs"))
        // Lock files and LibreOffice's temp files stayed local.
        #expect(try serverNames(fixture) == ["Deliveries.xlsx", "Site diary.odt"])
    }

    /// Opens each document with LibreOffice over UNO, changes it, stores it in place
    /// (LibreOffice writes lu*.tmp, renames it over the document, and keeps .~lock.NAME#
    /// while open), closes it, then opens it again and reports whether it looks modified.
    static let unoScript = #"""
        import os, subprocess, sys, time, uno
        from com.sun.star.beans import PropertyValue

        def prop(name, value):
            p = PropertyValue(); p.Name = name; p.Value = value; return p

        profile, paths = sys.argv[1], sys.argv[2:]
        pipe = "sitefs_test_%d" % os.getpid()
        office = subprocess.Popen(["soffice", "--headless", "--invisible", "--norestore", "--nologo", "--nodefault",
                                   "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
                                   "--accept=pipe,name=%s;urp;" % pipe])
        try:
            local = uno.getComponentContext()
            resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
            for attempt in range(300):
                try:
                    context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe); break
                except Exception:
                    time.sleep(0.2)
            else:
                sys.exit("LibreOffice did not start")
            desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
            for path in paths:
                url = uno.systemPathToFileUrl(path)
                doc = desktop.loadComponentFromURL(url, "_blank", 0, (prop("Hidden", True),))
                if doc is None: sys.exit("cannot open " + path)
                if path.endswith(".odt"):
                    text = doc.getText()
                    text.insertString(text.getEnd(), " edited through sitefs", False)
                else:
                    doc.getSheets().getByIndex(0).getCellByPosition(1, 1).setValue(13)
                doc.store()
                doc.close(True)
                again = desktop.loadComponentFromURL(url, "_blank", 0, (prop("Hidden", True),))
                if again is None: sys.exit("cannot reopen " + path)
                if again.isModified():
                    # What LibreOffice thought of it, for the log: read-only, still modified later.
                    time.sleep(2)
                    sys.exit("reopened %s as modified (read-only: %s, still modified after 2 s: %s, title: %s)"
                             % (path, again.isReadonly(), again.isModified(), again.getTitle()))
                again.close(True)
            print("reopened without a modified flag")
        finally:
            try: desktop.terminate()
            except Exception: pass
            try: office.wait(timeout=30)
            except Exception: office.kill()
        """#

    @Test func copyingAndSyncingTreesInWorksAndASecondRsyncTransfersNothing() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let tree = fixture.root.appendingPathComponent("tree")
        let make = """
            mkdir -p '\(tree.path)/plans/level 1' '\(tree.path)/forms' && \
            for i in 1 2 3 4 5; do echo "plan $i" > '\(tree.path)/plans/level 1/plan-'$i.txt; done && \
            head -c 300000 /dev/urandom > '\(tree.path)/forms/scan.pdf' && echo form > '\(tree.path)/forms/form.txt' && \
            touch -d '2024-03-01 12:00:00' '\(tree.path)/forms/form.txt'
            """
        try #require(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", make]).status == 0)
        var result = try fixture.shell("cp -a '\(tree.path)' 'Harbour Tower/copied'")
        try #require(result.status == 0, "cp -a: \(result.err)")
        result = try fixture.shell("rsync -a '\(tree.path)/' 'Riverside/synced/'")
        try #require(result.status == 0, "rsync: \(result.err)")
        try sync(fixture)
        #expect(try fixture.shell("diff -r '\(tree.path)' 'Harbour Tower/copied' && diff -r '\(tree.path)' Riverside/synced && echo same").out == "same\n")
        // mtimes went to the server: a second rsync finds nothing to do.
        result = try fixture.shell("rsync -a --itemize-changes '\(tree.path)/' 'Riverside/synced/'")
        #expect(result.status == 0 && result.out.isEmpty, "second rsync: \(result.out) \(result.err)")
        #expect(try fixture.serverContent("Riverside/synced/plans/level 1/plan-3.txt") == "plan 3\n")
        // tar in, then compare.
        let archive = fixture.root.appendingPathComponent("tree.tar")
        _ = try run(URL(fileURLWithPath: "/bin/tar"), ["-cf", archive.path, "-C", tree.path, "."])
        result = try fixture.shell("mkdir 'Harbour Tower/untarred' && tar -xf '\(archive.path)' -C 'Harbour Tower/untarred' && diff -r '\(tree.path)' 'Harbour Tower/untarred' && echo same")
        #expect(result.out == "same\n", "tar: \(result.err)")
        // Everyday tools over the tree.
        #expect(try fixture.shell("grep -rl 'plan 4' 'Harbour Tower/copied'").out == "Harbour Tower/copied/plans/level 1/plan-4.txt\n")
        #expect(try fixture.shell("find 'Harbour Tower/copied' -newer 'Harbour Tower/copied/forms/form.txt' -name '*.txt' | wc -l").out
            .trimmingCharacters(in: .whitespaces) == "5\n")
        #expect(try fixture.shell("ls -t 'Harbour Tower/copied/forms' | tail -n 1").out == "form.txt\n")
        #expect(try fixture.shell("du -s 'Harbour Tower/copied' | cut -f1").out != "0\n")
    }

    @Test func gitCloneCommitStatusAndFsckWorkOnTheMount() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let source = fixture.root.appendingPathComponent("source-repo")
        let setup = """
            git init -q '\(source.path)' && cd '\(source.path)' && \
            git config user.email t@example.com && git config user.name Tester && \
            echo '# Site docs' > README.md && mkdir docs && echo 'v1' > docs/plan.txt && \
            git add . && git commit -q -m first && echo 'v2' > docs/plan.txt && git commit -q -am second
            """
        try #require(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", setup]).status == 0)
        let git = "git -c user.email=t@example.com -c user.name=Tester -c core.fsync=none"
        var result = try fixture.shell("\(git) clone -q '\(source.path)' 'Harbour Tower/repo'", timeout: 120)
        try #require(result.status == 0, "git clone: \(result.err)")
        result = try fixture.shell("cd 'Harbour Tower/repo' && echo 'v3' >> docs/plan.txt && \(git) commit -q -am third && \(git) status --porcelain && \(git) fsck --strict 2>&1 && \(git) log --oneline | wc -l", timeout: 120)
        #expect(result.status == 0, "git: \(result.err)")
        #expect(result.out.trimmingCharacters(in: .whitespacesAndNewlines) == "3", "status must be clean, three commits: \(result.out)")
        try sync(fixture)
        #expect(try fixture.serverContent("Harbour Tower/repo/docs/plan.txt") == "v2\nv3\n")
        // The lock file git made while committing is gone from the server too.
        #expect(try fixture.serverItem("Harbour Tower/repo/.git/index.lock") == nil)
    }

    @Test func locksWorkLocallyAndTheModificationTimeStaysPutOnceUploaded() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let path = "Harbour Tower/schedule.txt"
        _ = try fixture.shell("echo week 1 > '\(path)'")
        let before = try fixture.shell("stat -c '%y %h' '\(path)'").out
        try sync(fixture)
        // Same time to the microsecond (what the server keeps), one link, as LibreOffice expects.
        #expect(try fixture.shell("stat -c '%y %h' '\(path)'").out == before)
        #expect(before.hasSuffix(" 1\n"), "\(before)")
        let server = try #require(try fixture.serverItem(path))
        let shownMicros = try fixture.shell("stat -c '%.6Y' '\(path)'").out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(shownMicros.replacingOccurrences(of: ".", with: "") == String(server.modifiedAt.microseconds), "\(shownMicros) vs \(server.modifiedAt)")
        // flock and POSIX locks are kept by the kernel: a second holder is refused.
        let flock = try fixture.shell("flock -n '\(path)' -c \"flock -n '\(path)' -c true && echo second-got-it || echo refused\"")
        #expect(flock.out == "refused\n", "flock: \(flock.out) \(flock.err)")
        let posix = try run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
            import fcntl, os, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            pid = os.fork()
            if pid == 0:
                other = os.open(sys.argv[1], os.O_RDWR)
                try:
                    fcntl.lockf(other, fcntl.LOCK_EX | fcntl.LOCK_NB); os._exit(1)
                except OSError:
                    os._exit(0)
            _, status = os.waitpid(pid, 0)
            print("refused" if os.WEXITSTATUS(status) == 0 else "granted twice")
            """, fixture.path(path)])
        #expect(posix.out == "refused\n", "POSIX lock: \(posix.out) \(posix.err)")
    }
}
