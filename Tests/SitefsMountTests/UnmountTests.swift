import Foundation
import SitefsTestSupport
import Testing

/// `sitefs unmount` never hangs: with the server gone it waits a bounded time (or until a
/// second Ctrl-C), says what stays queued, and always leaves the mount point unmounted; the
/// next mount sends what was left.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct UnmountTests {
    /// A mount through the fault proxy with one save the server has not got (it refuses).
    private func mountWithAnUnsentSave() throws -> (MountFixture, FaultProxy) {
        let fixture = try MountFixture(extraMountArguments: ["--io-timeout", "2", "--write-back-delay", "0.2"], throughFaultProxy: true)
        let proxy = try #require(fixture.proxy)
        _ = try fixture.shell("ls Riverside")
        proxy.mode = .refuse
        try "written while the server is away\n".write(toFile: fixture.path("Riverside/late.txt"), atomically: false, encoding: .utf8)
        return (fixture, proxy)
    }

    /// The next mount of the same cache sends what the unmount left queued.
    private func remountAndExpectTheSaveSent(_ fixture: MountFixture, _ proxy: FaultProxy) throws {
        #expect(eventually { fixture.daemons.isEmpty }, "the daemon went on after the unmount gave up")
        proxy.mode = .pass
        let mount = try fixture.sitefs(["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path])
        #expect(mount.status == 0, "\(mount.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"]).status == 0)
        #expect(try fixture.serverContent("Riverside/late.txt") == "written while the server is away\n")
    }

    @Test func anUnmountThatCannotReachTheServerStopsAtItsTimeoutAndStillUnmounts() throws {
        let (fixture, proxy) = try mountWithAnUnsentSave()
        defer { fixture.tearDown() }
        let started = Date()
        let unmount = try fixture.sitefs(["unmount", fixture.mountpoint.path, "--timeout", "2"])
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(unmount.status == 0, "\(unmount.err)")
        #expect(unmount.err.contains("1 uploads stay queued"), "\(unmount.err)")
        #expect(unmount.err.contains("unreachable"), "says why: \(unmount.err)")
        #expect(!fixture.isMounted)
        try remountAndExpectTheSaveSent(fixture, proxy)
    }

    @Test func aSecondCtrlCStopsTheWaitAndUnmounts() throws {
        let (fixture, proxy) = try mountWithAnUnsentSave()
        defer { fixture.tearDown() }
        let process = Process()
        process.executableURL = BuiltProducts.executable("sitefs")
        process.arguments = ["unmount", fixture.mountpoint.path]  // the default timeout: 30 s
        process.environment = fixture.environment
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var said = Data()
        func waitFor(_ text: String) -> Bool {
            eventually(timeout: .seconds(20)) {
                var ready = pollfd(fd: errors.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 0) > 0 { said += errors.fileHandleForReading.availableData }
                return String(decoding: said, as: UTF8.self).contains(text)
            }
        }
        // Once it waits, the first Ctrl-C only says how to stop waiting.
        #expect(waitFor("pending uploads"), "\(String(decoding: said, as: UTF8.self))")
        kill(process.processIdentifier, SIGINT)
        #expect(waitFor("Ctrl-C again"), "\(String(decoding: said, as: UTF8.self))")
        #expect(process.isRunning)
        let second = Date()
        kill(process.processIdentifier, SIGINT)
        #expect(eventually(timeout: .seconds(10)) { !process.isRunning })
        #expect(Date().timeIntervalSince(second) < 10)
        said += errors.fileHandleForReading.readDataToEndOfFile()
        #expect(process.terminationStatus == 0, "\(String(decoding: said, as: UTF8.self))")
        #expect(String(decoding: said, as: UTF8.self).contains("stay queued"))
        #expect(!fixture.isMounted)
        try remountAndExpectTheSaveSent(fixture, proxy)
    }
}
