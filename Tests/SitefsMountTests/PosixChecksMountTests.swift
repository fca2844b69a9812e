import Foundation
import SitefsTestSupport
import Testing

/// sitefs's own POSIX checks (Support/posix_checks.py, issue 35): chmod and stat, modes of
/// new files and folders under a umask, mkdir and rmdir, symlink, readlink and lstat,
/// rename and unlink of links, utimensat with UTIME_NOW and UTIME_OMIT, truncate,
/// ownership (the mount's user owns everything; a no-op chown works, a chown to another user
/// is EPERM), what the mount refuses with EPERM (hard links, FIFOs, device nodes, sockets),
/// and, as an unprivileged user, the kernel's permission checks on the modes kept (a 0000
/// file cannot be opened). Each check runs on a local folder first (the checks are right
/// there), then on the mount: as root on a root mount, and as a user on that user's mount;
/// on sitefs-server and on Apache.
@Suite(.serialized, .enabled(if: fuseAvailable && TestAccount.canSwitchUsers, "needs /dev/fuse and root to make a test account"))
struct PosixChecksMountTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/posix_checks.py").path
    static let python = URL(fileURLWithPath: "/usr/bin/python3")

    /// The checks' lines ("ok NAME", "not ok NAME: WHAT"); an Issue per failed check.
    private static func expectAllPass(_ outcome: ProcessOutcome, _ place: String, log: String = "",
                                      sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = outcome.out.split(separator: "\n").map(String.init)
        let failed = lines.filter { $0.hasPrefix("not ok ") }
        for failure in failed {
            Issue.record("\(place): \(failure.dropFirst(7))", sourceLocation: sourceLocation)
        }
        #expect(lines.contains { $0.hasPrefix("ok ") } || !failed.isEmpty, "\(place): no checks ran: \(outcome.err)",
                sourceLocation: sourceLocation)
        if outcome.status != 0, failed.isEmpty {
            Issue.record("\(place): exit \(outcome.status): \(outcome.err.suffix(2000))", sourceLocation: sourceLocation)
        }
        if !failed.isEmpty, !log.isEmpty { print("\(place) daemon log:\n\(log.suffix(3000))") }
    }

    @Test(arguments: [ScenarioBackend.sitefs, .apache])
    func asRootOnARootMount(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend)
        defer { mount.tearDown() }
        let local = mount.root.appendingPathComponent("local-checks")
        try FileManager.default.createDirectory(at: local, withIntermediateDirectories: true)
        let here = try run(Self.python, [Self.script, local.path], timeout: 120)
        Self.expectAllPass(here, "local disk, root")
        let folder = mount.path("Riverside/checks")
        #expect(try mount.shell("mkdir Riverside/checks").status == 0)
        let there = try run(Self.python, [Self.script, folder, "--mount"], timeout: 300)
        Self.expectAllPass(there, "\(backend) mount, root", log: mount.daemonLog)
    }

    @Test(arguments: [ScenarioBackend.sitefs, .apache])
    func asAUserOnTheirMount(_ backend: ScenarioBackend) throws {
        try TestAccount.openFUSEToUsers()
        let user = try TestAccount.named("sitefs-test-user")
        let mount = try DaemonMount(prefix: "posix-user", as: user)
        defer { mount.tearDown() }
        let server = try backend.start(in: mount.root)
        mount.onTearDown { server.stop() }
        try mount.login(server.url, user: "anna", password: ScenarioMount.password)
        try mount.mount(["--poll-interval", "0.3", "--cache-ttl", "1", "--log-level", "debug"])

        let home = try #require(mount.home)
        let local = home.appendingPathComponent("local-checks")
        try FileManager.default.createDirectory(at: local, withIntermediateDirectories: true)
        try user.own(local.path)
        let here = try mount.runAsUser(Self.python, [Self.script, local.path], timeout: 120)
        Self.expectAllPass(here, "local disk, \(user.name)")
        #expect(try mount.shell("mkdir Riverside/checks").status == 0)
        let there = try mount.runAsUser(Self.python, [Self.script, mount.path("Riverside/checks"), "--mount"], timeout: 300)
        Self.expectAllPass(there, "\(backend) mount, \(user.name)", log: mount.daemonLog)
    }
}
