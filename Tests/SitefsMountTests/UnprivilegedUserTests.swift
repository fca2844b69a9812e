import Foundation
import SitefsAPI
import SitefsDemoContent
import SitefsTestSupport
import Testing

/// What a user runs, run as a user. People mount sitefs as themselves, not as root, and root
/// passes checks a user meets: the kernel let only root set the attributes `sitefs sync` and
/// `sitefs retry` used on the read-only mount root (issue 16), and every test ran as root.
///
/// These tests run `sitefs` and the tools as an unprivileged account made for them
/// (`sitefs-test-user`), with /dev/fuse open to users as Debian's udev rule has it, and check
/// what a second account (`sitefs-test-other`) can see. They need root to make the accounts
/// and switch to them, which CI has.
@Suite(.serialized, .enabled(if: fuseAvailable && TestAccount.canSwitchUsers, "needs /dev/fuse and root to make test accounts"))
struct UnprivilegedUserTests {
    private static func user() throws -> TestAccount {
        try TestAccount.openFUSEToUsers()
        return try TestAccount.named("sitefs-test-user")
    }

    private static func otherUser() throws -> TestAccount { try TestAccount.named("sitefs-test-other") }

    /// The uid owning `path`.
    private func owner(_ path: String) -> uid_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_uid : nil
    }

    private func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// Search, versions and restore as the user who mounted: the restore is a set-attribute,
    /// which the kernel allows only on what the caller may write.
    @Test func aUserSearchesListsAndRestoresVersionsWithoutRoot() throws {
        let fixture = try MountFixture(as: try Self.user())
        defer { fixture.tearDown() }
        #expect(try fixture.shell("echo 'first draft' > Riverside/minutes.txt").status == 0)
        try fixture.mount.sync()
        #expect(try fixture.shell("echo 'second draft' > Riverside/minutes.txt").status == 0)
        try fixture.mount.sync()

        let found = try fixture.sitefs(["search", fixture.mountpoint.path, "minutes", "-0"])
        #expect(found.status == 0 && found.out == fixture.path("Riverside/minutes.txt") + "\0", "\(found.out)\(found.err)")
        #expect(try fixture.shell("cat .search/minutes/minutes.txt").out == "second draft\n")
        let versions = try fixture.sitefs(["versions", fixture.path("Riverside/minutes.txt")])
        #expect(versions.status == 0, "\(versions.err)")
        let restored = try fixture.sitefs(["restore", fixture.path("Riverside/minutes.txt"), "-1"])
        #expect(restored.status == 0, "\(restored.out)\(restored.err)")
        #expect(try fixture.shell("cat Riverside/minutes.txt").out == "first draft\n")
        #expect(try fixture.shell("cat '.versions/Riverside/minutes.txt/'*'(current).txt'").out == "first draft\n")
    }

    @Test func aUserMountsEditsSyncsRetriesAndUnmountsWithoutRoot() throws {
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        // The daemon runs as the user, mounted through fusermount3.
        let daemon = try #require(fixture.daemons.first, "no daemon found")
        let status = try String(contentsOfFile: "/proc/\(daemon)/status", encoding: .utf8)
        #expect(status.split(separator: "\n").contains { $0.hasPrefix("Uid:\t\(user.uid)\t") }, "the daemon does not run as the user")

        let edit = try fixture.shell("echo 'first draft' > Riverside/notes.txt && sed -i 's/first/second/' Riverside/notes.txt")
        #expect(edit.status == 0, "\(edit.err)")
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"])
        #expect(sync.status == 0, "sitefs sync as a user: \(sync.err)")
        #expect(try fixture.serverContent("Riverside/notes.txt") == "second draft\n")

        let shown = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(shown.status == 0 && shown.out.contains("pending uploads: 0"), "sitefs status as a user: \(shown.out) \(shown.err)")
        let retry = try fixture.sitefs(["retry", fixture.mountpoint.path])
        #expect(retry.status == 0, "sitefs retry as a user: \(retry.err)")

        // The credentials and the cache are the user's own, private, in their XDG folders.
        let home = try #require(fixture.home)
        let credentials = home.appendingPathComponent(".config/sitefs/credentials.json").path
        #expect(owner(credentials) == user.uid && mode(credentials) == 0o600, "credentials: owner \(String(describing: owner(credentials))), mode \(String(describing: mode(credentials)))")
        #expect(fixture.cache.path.hasPrefix(home.appendingPathComponent(".cache/sitefs").path))
        #expect(owner(fixture.cache.path) == user.uid && mode(fixture.cache.path) == 0o700)

        let unmount = try fixture.sitefs(["unmount", fixture.mountpoint.path])
        #expect(unmount.status == 0, "sitefs unmount as a user: \(unmount.err)")
        #expect(!fixture.isMounted)
    }

    @Test func aUserPinsAFolderIncludingAReadOnlyOneAndItsCopiesArePrivate() throws {
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        #expect(try fixture.shell("mkdir Riverside/Plans && echo 'level 1' > Riverside/Plans/l1.txt").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        // `sitefs pin` asks by reading an attribute, so a read-only site (0555) pins too.
        let pin = try fixture.sitefs(["pin", fixture.path("Riverside/Plans"), fixture.path("Archive")])
        #expect(pin.status == 0, "sitefs pin as a user: \(pin.err)")
        let synced = try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path, "--timeout", "60"])
        #expect(synced.status == 0, "sitefs sync --pinned as a user: \(synced.err)")
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state Riverside/Plans/l1.txt").out == "downloaded")
        // And setfattr where the user may write.
        #expect(try fixture.shell("setfattr -x user.sitefs.pinned Riverside/Plans").status == 0)
        for name in ["pins.sqlite", "content"] {
            let path = fixture.cache.appendingPathComponent(name).path
            #expect(owner(path) == user.uid, "\(name) is not the user's")
            #expect(mode(path).map { $0 & 0o077 == 0 } == true, "\(name) is readable by others: \(String(describing: mode(path)))")
        }
        let unmount = try fixture.sitefs(["unmount", fixture.mountpoint.path, "--timeout", "10"])
        #expect(unmount.status == 0, "\(unmount.err)")
    }

    @Test func aUserMountsAWebDAVServerAndItsIdentitiesStayPrivate() throws {
        let user = try Self.user()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-davuser-\(UUID().uuidString.prefix(8))")
        let home = root.appendingPathComponent("home")
        let mountpoint = home.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("dav-root/Riverside"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try user.own(home.path)
        try user.own(mountpoint.path, mode: 0o755)
        let server = try NginxDAVServer(root: root.appendingPathComponent("dav-root"))
        defer { server.stop() }
        let environment = TestAccount.environment(home: home)
        let sitefs = BuiltProducts.executable("sitefs")
        defer {
            _ = try? user.run(sitefs, ["unmount", mountpoint.path], environment: environment)
            MountTable.release(mountpoint.path)
        }
        let login = try user.run(sitefs, ["login", server.collectionURL, "--user", "anna"], stdin: "any\n", environment: environment)
        try #require(login.status == 0, "\(login.err)")
        let mount = try user.run(sitefs, ["mount", server.collectionURL, mountpoint.path], environment: environment)
        try #require(mount.status == 0, "\(mount.err)")
        let edit = try user.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo 'by a user' > '\(mountpoint.path)/Riverside/notes.txt'"],
                                environment: environment)
        #expect(edit.status == 0, "\(edit.err)")
        let sync = try user.run(sitefs, ["sync", mountpoint.path, "--timeout", "60"], environment: environment)
        #expect(sync.status == 0, "\(sync.err)")
        #expect(try String(contentsOf: server.onDisk("Riverside/notes.txt"), encoding: .utf8) == "by a user\n")
        // The identity table is the user's own and private, beside the rest of the cache.
        let caches = home.appendingPathComponent(".cache/sitefs")
        let made = try FileManager.default.contentsOfDirectory(atPath: caches.path)
        try #require(made.count == 1)
        let identities = caches.appendingPathComponent(made[0]).appendingPathComponent("webdav-identities.sqlite").path
        #expect(owner(identities) == user.uid && mode(identities) == 0o600)
        let unmount = try user.run(sitefs, ["unmount", mountpoint.path], environment: environment)
        #expect(unmount.status == 0, "\(unmount.err)")
    }

    @Test func anotherUserSeesNeitherTheMountNorItsCacheJournalLogOrCredentials() throws {
        let user = try Self.user(), other = try Self.otherUser()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        try #require(fixture.shell("echo private > Riverside/secret.txt").status == 0)
        try #require(fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let home = try #require(fixture.home)
        let otherHome = fixture.root.appendingPathComponent("other-home")
        try FileManager.default.createDirectory(at: otherHome, withIntermediateDirectories: true)
        try other.own(otherHome.path)
        let environment = TestAccount.environment(home: otherHome)
        let cat = URL(fileURLWithPath: "/bin/cat"), ls = URL(fileURLWithPath: "/bin/ls")

        let listing = try other.run(ls, [fixture.mountpoint.appendingPathComponent("Riverside").path], environment: environment)
        #expect(listing.status != 0 && listing.err.contains("Permission denied"), "the other user listed the mount: \(listing)")
        for file in ["metadata.sqlite", "journal.sqlite", "sitefs.log"] {
            let path = fixture.cache.appendingPathComponent(file).path
            #expect(FileManager.default.fileExists(atPath: path), "\(file) is missing")
            let read = try other.run(cat, [path], environment: environment)
            #expect(read.status != 0 && read.err.contains("Permission denied"), "the other user read \(file)")
        }
        let credentials = home.appendingPathComponent(".config/sitefs/credentials.json").path
        let read = try other.run(cat, [credentials], environment: environment)
        #expect(read.status != 0 && read.err.contains("Permission denied"), "the other user read the credentials")
        // Nor can they ask the mount's daemon for anything.
        let status = try other.run(BuiltProducts.executable("sitefs"), ["status", fixture.mountpoint.path], environment: environment)
        #expect(status.status != 0, "the other user read the mount's status: \(status.out)")
    }

    @Test func libreOfficeSavesInPlaceAsAUser() throws {
        let python = URL(fileURLWithPath: "/usr/bin/python3")
        try #require(try run(python, ["-c", "import uno"]).status == 0 && FileManager.default.fileExists(atPath: "/usr/bin/soffice"),
                     "LibreOffice with python3-uno is needed (scripts/test installs it)")
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        let site = try #require(try fixture.serverItem("Harbour Tower"))
        let document = fixture.root.appendingPathComponent("diary.odt")
        try Data(OfficeDocuments.odt(title: "Site diary", paragraphs: ["Concrete poured."])).write(to: document)
        let created = try fixture.api.call("POST", "/v1/items/\(site.id)/children?name=diary.odt",
                                           extra: ["-H", "Expect:", "--data-binary", "@\(document.path)"])
        try #require(created.status == 201, "\(created.body)")
        let before = try JSONDecoder().decode(Item.self, from: Data(created.body.utf8))

        let home = try #require(fixture.home)
        let script = home.appendingPathComponent("edit.py")
        try EditorTests.unoScript.write(to: script, atomically: true, encoding: .utf8)
        try user.own(script.path, mode: 0o600)
        let result = try fixture.runAsUser(python, [script.path, home.appendingPathComponent("lo-profile").path,
                                                    fixture.path("Harbour Tower/diary.odt")], timeout: 240)
        try #require(result.status == 0, "LibreOffice as a user: \(result.out)\n\(result.err)")
        let sync = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"])
        #expect(sync.status == 0, "\(sync.err)")
        let after = try #require(try fixture.serverItem("Harbour Tower/diary.odt"))
        #expect(after.id == before.id && after.etag != before.etag, "the save is a new version of the same document")
    }

    @Test func allowOtherWithoutUserAllowOtherIsRefusedClearly() throws {
        let configuration = (try? String(contentsOfFile: "/etc/fuse.conf", encoding: .utf8)) ?? ""
        let allowed = configuration.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == "user_allow_other" }
        try #require(!allowed, "this machine's /etc/fuse.conf has user_allow_other: the refusal cannot be seen here")
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        let second = try #require(fixture.home).appendingPathComponent("mnt2")
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        try user.own(second.path, mode: 0o755)
        let mount = try fixture.sitefs(["mount", fixture.mountURL, second.path, "--allow-other"])
        #expect(mount.status != 0)
        #expect(mount.err.contains("user_allow_other") && mount.err.contains("/etc/fuse.conf"), "unclear: \(mount.err)")
        #expect(!MountTable.isMounted(second.path))
    }

    @Test func aMountPointTheUserMayNotWriteIsRefusedClearly() throws {
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        let rootOwned = fixture.root.appendingPathComponent("not-yours")
        try FileManager.default.createDirectory(at: rootOwned, withIntermediateDirectories: true)
        chmod(rootOwned.path, 0o755)
        let mount = try fixture.sitefs(["mount", fixture.mountURL, rootOwned.path])
        #expect(mount.status != 0)
        #expect(mount.err.contains(rootOwned.path) && mount.err.lowercased().contains("permission"), "unclear: \(mount.err)")
        #expect(!MountTable.isMounted(rootOwned.path))
    }

    @Test func afterTheDaemonIsKilledTheUserUnmountsWhatItLeft() throws {
        let user = try Self.user()
        let fixture = try MountFixture(as: user)
        defer { fixture.tearDown() }
        let daemon = try #require(fixture.daemons.first)
        let killed = try fixture.runAsUser(URL(fileURLWithPath: "/bin/kill"), ["-9", String(daemon)])
        try #require(killed.status == 0, "\(killed.err)")
        #expect(eventually { fixture.daemons.isEmpty })
        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.status != 0 && status.err.contains("sitefs unmount"), "status after the kill: \(status.err)")
        let unmount = try fixture.sitefs(["unmount", fixture.mountpoint.path])
        #expect(unmount.status == 0, "sitefs unmount of a dead daemon's mount as a user: \(unmount.err)")
        #expect(!fixture.isMounted)
        // And fusermount3 -u works as the user too, on a mount left the same way.
        let remount = try fixture.sitefs(["mount", fixture.mountURL, fixture.mountpoint.path])
        try #require(remount.status == 0, "\(remount.err)")
        for pid in fixture.daemons { kill(pid, SIGKILL) }
        #expect(eventually { fixture.daemons.isEmpty })
        let fusermount = try fixture.runAsUser(URL(fileURLWithPath: "/bin/fusermount3"), ["-u", fixture.mountpoint.path])
        #expect(fusermount.status == 0, "\(fusermount.err)")
        #expect(!fixture.isMounted)
    }
}
