import Foundation
import SitefsTestSupport
import Testing

/// mount(8) and /etc/fstab: `mount -t fuse.sitefs URL DIR -o OPTIONS` goes through fuse3's
/// mount.fuse, which runs `sitefs URL DIR -o OPTIONS`; the -o forms of sitefs's flags and
/// the kernel's own mount flags take effect. Root only (mount(8) without an fstab `user`
/// entry is root's; the `user` entry is tested from the installed package by
/// scripts/test-package, where mount(8) finds sitefs on its fixed PATH).
@Suite(.serialized, .enabled(if: fuseAvailable && TestAccount.canSwitchUsers, "needs /dev/fuse and root"))
struct MountHelperTests {
    /// The environment mount(8) passes on to mount.fuse and sitefs: the fixture's sign-in
    /// and caches.
    private func environment(_ fixture: MountFixture) -> [String: String] { fixture.environment }

    /// What the mount is: its /proc/self/mounts line.
    private func mountLine(_ path: String) -> String? {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .first { $0.split(separator: " ").dropFirst().first == Substring(path) }.map(String.init)
    }

    /// The running daemon's arguments.
    private func daemonArguments(_ fixture: MountFixture) throws -> [String] {
        let pid = try #require(fixture.daemons.first)
        let raw = try #require(FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"))
        return raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func mountTypeFuseSitefsTakesItsFlagsAsOptions() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let link = try BuiltSitefsOnMountPath()
        defer { link.remove() }
        let options = "cache_dir=\(fixture.cache.path),page_size=7,poll_interval=0.5,read_only,noexec,nosuid,_netdev,x-systemd.automount"
        let mount = try run(URL(fileURLWithPath: "/bin/mount"), ["-t", "fuse.sitefs", fixture.mountURL, fixture.mountpoint.path, "-o", options],
                            environment: environment(fixture))
        #expect(mount.status == 0, "\(mount.err) \(mount.out)")
        let line = try #require(mountLine(fixture.mountpoint.path), "not mounted: \(mount.err)")
        let kernelOptions = Set(line.split(separator: " ")[3].split(separator: ",").map(String.init))
        #expect(line.split(separator: " ")[2] == "fuse.sitefs", "\(line)")
        #expect(kernelOptions.isSuperset(of: ["ro", "noexec", "nosuid"]), "\(line)")

        let arguments = try daemonArguments(fixture)
        #expect(arguments.contains("--page-size") && arguments[arguments.firstIndex(of: "--page-size")! + 1] == "7", "\(arguments)")
        #expect(arguments.contains(fixture.cache.path), "\(arguments)")
        #expect(FileManager.default.fileExists(atPath: fixture.cache.appendingPathComponent("metadata.sqlite").path))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint.path)) == ["Archive", "Harbour Tower", "Riverside"])
        let write = try fixture.shell("echo x > Riverside/refused.txt")
        #expect(write.status != 0, "read_only let a write through")

        let unmount = try run(URL(fileURLWithPath: "/bin/umount"), [fixture.mountpoint.path])
        #expect(unmount.status == 0, "\(unmount.err)")
        #expect(eventually(timeout: .seconds(30)) { fixture.daemons.isEmpty })
    }

    @Test func anUnknownOptionIsRefusedByName() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let link = try BuiltSitefsOnMountPath()
        defer { link.remove() }
        let mount = try run(URL(fileURLWithPath: "/bin/mount"),
                            ["-t", "fuse.sitefs", fixture.mountURL, fixture.mountpoint.path, "-o", "cache_dir=\(fixture.cache.path),colour=blue"],
                            environment: environment(fixture))
        #expect(mount.status != 0)
        #expect((mount.err + mount.out).contains("colour"), "\(mount.err) \(mount.out)")
        #expect(!fixture.isMounted)
    }

    @Test func anFstabEntryMountsByItsMountPoint() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let link = try BuiltSitefsOnMountPath()
        defer { link.remove() }
        let fstab = "/etc/fstab"
        let original = try String(contentsOfFile: fstab, encoding: .utf8)
        defer { try? original.write(toFile: fstab, atomically: true, encoding: .utf8) }
        let entry = "\(fixture.mountURL) \(fixture.mountpoint.path) fuse.sitefs "
            + "_netdev,noauto,cache_dir=\(fixture.cache.path),page_size=9,write_back_delay=0.2 0 0\n"
        try (original + (original.hasSuffix("\n") || original.isEmpty ? "" : "\n") + entry).write(toFile: fstab, atomically: true, encoding: .utf8)

        let mount = try run(URL(fileURLWithPath: "/bin/mount"), [fixture.mountpoint.path], environment: environment(fixture))
        #expect(mount.status == 0, "\(mount.err) \(mount.out)")
        #expect(fixture.isMounted)
        let arguments = try daemonArguments(fixture)
        #expect(arguments[arguments.firstIndex(of: "--page-size")! + 1] == "9", "\(arguments)")

        // A save through the fstab mount reaches the server.
        try "from the fstab mount\n".write(toFile: fixture.path("Riverside/fstab.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        #expect(try fixture.serverContent("Riverside/fstab.txt") == "from the fstab mount\n")
        let unmount = try run(URL(fileURLWithPath: "/bin/umount"), [fixture.mountpoint.path])
        #expect(unmount.status == 0, "\(unmount.err)")
    }
}

/// mount.fuse finds `sitefs` on a fixed PATH, not the caller's: for a test, the built one is
/// linked into /usr/local/sbin (first on that PATH, and where no install puts sitefs), and
/// the link is removed after. The suite is serialized: one test at a time has it.
private struct BuiltSitefsOnMountPath {
    static let link = "/usr/local/sbin/sitefs"

    init() throws {
        var existing = stat()
        guard lstat(Self.link, &existing) != 0 else {
            throw ProcessFailure("\(Self.link) exists; the mount(8) tests need that name for the built sitefs")
        }
        try FileManager.default.createDirectory(atPath: "/usr/local/sbin", withIntermediateDirectories: true)
        guard symlink(BuiltProducts.executable("sitefs").path, Self.link) == 0 else {
            throw ProcessFailure("cannot link \(Self.link): \(String(cString: strerror(errno)))")
        }
    }

    func remove() { unlink(Self.link) }
}
