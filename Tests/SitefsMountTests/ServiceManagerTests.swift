import Foundation
import SitefsTestSupport
import Testing

/// `sitefs mount --foreground` as a systemd `Type=notify` service: READY=1 reaches
/// `$NOTIFY_SOCKET` only once the mount is live, and SIGTERM (systemd's stop) unmounts and
/// waits a bounded time for uploads, leaving the rest journaled for the next mount.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct ServiceManagerTests {
    /// The daemon in the foreground, as the user unit runs it, with a fake notify socket.
    private final class ForegroundDaemon {
        let process = Process()
        let socket: NotifySocket
        var seen: [String] = []
        let log: URL

        init(_ fixture: MountFixture, extraArguments: [String] = []) throws {
            socket = try NotifySocket(in: fixture.root)
            log = fixture.root.appendingPathComponent("foreground.log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            process.executableURL = BuiltProducts.executable("sitefs")
            process.arguments = ["mount", "--foreground", fixture.mountURL, fixture.mountpoint.path,
                                 "-o", "cache_dir=\(fixture.cache.path),poll_interval=0.3,io_timeout=2,write_back_delay=0.2"] + extraArguments
            process.environment = ProcessInfo.processInfo.environment.merging(fixture.environment) { $1 }
                .merging(["NOTIFY_SOCKET": socket.path]) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: log)
            process.standardError = try FileHandle(forWritingTo: log)
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        func stop() {
            if process.isRunning { process.terminate() }
            if !eventually(timeout: .seconds(60), { !self.process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func readyIsSentOnlyOnceTheMountIsLive() throws {
        let fixture = try MountFixture(throughFaultProxy: true, mounting: false)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        // The daemon's first request (its check of the server, before mounting) goes
        // unanswered until the test lets it through: the daemon is held before the mount.
        proxy.mode = .blackhole
        let daemon = try ForegroundDaemon(fixture)
        defer { daemon.stop() }
        #expect(eventually(timeout: .seconds(20)) { proxy.faultsInjected > 0 }, "the daemon never asked the server")
        #expect(daemon.socket.receive(timeout: .zero) == nil, "READY before the mount existed")
        #expect(!fixture.isMounted)

        proxy.mode = .pass
        let ready = daemon.socket.waitFor("READY=1", seen: &daemon.seen)
        #expect(ready != nil, "no READY=1; got \(daemon.seen); output: \(daemon.output)")
        // Live when READY arrives: mounted, and the sites answer.
        #expect(fixture.isMounted)
        let sites = try FileManager.default.contentsOfDirectory(atPath: fixture.mountpoint.path)
        #expect(Set(sites) == ["Archive", "Harbour Tower", "Riverside"])
        #expect(ready?.contains("STATUS=Mounted") == true, "\(ready ?? "")")
        #expect(daemon.seen.filter { $0.contains("READY=1") }.count == 1)

        // systemd's stop: SIGTERM; the daemon says it is stopping, unmounts and exits 0.
        daemon.process.terminate()
        #expect(daemon.socket.waitFor("STOPPING=1", seen: &daemon.seen) != nil, "\(daemon.seen)")
        try #require(eventually(timeout: .seconds(30)) { !daemon.process.isRunning }, "\(daemon.output)")
        #expect(daemon.process.terminationStatus == 0, "\(daemon.output)")
        #expect(!fixture.isMounted)
    }

    @Test func aStopWaitsABoundedTimeForUploadsAndLeavesTheRestForTheNextMount() throws {
        let fixture = try MountFixture(throughFaultProxy: true, mounting: false)
        defer { fixture.tearDown() }
        let proxy = try #require(fixture.proxy)
        let daemon = try ForegroundDaemon(fixture, extraArguments: ["-o", "stop_timeout=2"])
        defer { daemon.stop() }
        #expect(daemon.socket.waitFor("READY=1", seen: &daemon.seen) != nil, "\(daemon.output)")
        _ = try fixture.shell("ls Riverside")
        proxy.mode = .refuse
        try "saved just before the stop\n".write(toFile: fixture.path("Riverside/stop.txt"), atomically: false, encoding: .utf8)

        let stopped = Date()
        daemon.process.terminate()
        try #require(eventually(timeout: .seconds(30)) { !daemon.process.isRunning }, "\(daemon.output)")
        #expect(Date().timeIntervalSince(stopped) < 20, "the stop was not bounded by --stop-timeout")
        #expect(daemon.process.terminationStatus == 0, "\(daemon.output)")
        #expect(!fixture.isMounted)
        #expect(daemon.output.contains("stay queued"), "\(daemon.output)")
        #expect(try fixture.serverItem("Riverside/stop.txt") == nil)

        // The next mount of the same cache sends it.
        proxy.mode = .pass
        let mount = try fixture.sitefs(["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path])
        #expect(mount.status == 0, "\(mount.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        #expect(try fixture.serverContent("Riverside/stop.txt") == "saved just before the stop\n")
    }
}
