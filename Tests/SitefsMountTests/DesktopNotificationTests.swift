import Foundation
import SitefsTestSupport
import Testing

/// A conflict copy and a sign-in the server stopped accepting reach the desktop as
/// freedesktop notifications on the session bus (and the log, always). The bus is a private
/// `dbus-daemon --session`; the notification server on it is a small listener that records
/// every Notify call (Support/notification_listener.py).
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct DesktopNotificationTests {
    @Test func aConflictCopyAndAnExpiredSignInAreNotified() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let bus = try mountOnAPrivateBus(fixture, extraArguments: ["--no-lock-writers"])  // edited elsewhere while open here
        defer { bus.stop() }

        // A save the server's newer version turns into a conflict copy.
        try "original".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let item = try #require(try fixture.serverItem("Riverside/plan.txt"))
        try editWhileOpen(fixture.path("Riverside/plan.txt"), to: "mine") {
            _ = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", "theirs"])
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let conflict = bus.waitForNotification { ($0["summary"] as? String)?.contains("conflict copy") == true }
        let body = try #require(conflict?["body"] as? String, "no conflict notification; recorded: \(bus.recorded)")
        #expect(body.contains("Riverside/plan.txt"), "\(body)")
        #expect(body.contains("plan (conflict "), "\(body)")
        #expect(conflict?["app_name"] as? String == "sitefs")
        #expect(fixture.daemonLog.contains("conflict: plan.txt"))

        // The server forgets the mount's session: the next save needs a new sign-in.
        let credentials = try JSONDecoder().decode([String: [String: String]].self, from: Data(contentsOf:
            fixture.root.appendingPathComponent("config/sitefs/credentials.json")))
        _ = try Curl(baseURL: fixture.server.baseURL, token: credentials[fixture.server.baseURL]?["token"]).call("DELETE", "/v1/session")
        try "v2".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        let signIn = bus.waitForNotification { ($0["summary"] as? String)?.contains("sign in again") == true }
        let signInBody = try #require(signIn?["body"] as? String, "no sign-in notification; recorded: \(bus.recorded)")
        #expect(signInBody.contains("sitefs login \(fixture.server.baseURL) --user anna"), "\(signInBody)")
        #expect(fixture.daemonLog.contains("no longer accepts this mount's sign-in"))
        // Once per spell, however many requests meet the refusal.
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "2"]).status != 0)
        #expect(bus.recorded.filter { ($0["summary"] as? String)?.contains("sign in again") == true }.count == 1)
    }
}

extension DesktopNotificationTests {
    /// A session bus of the test's own with the notification listener on it, and the
    /// fixture's mount started with that bus as its session's.
    private func mountOnAPrivateBus(_ fixture: MountFixture, extraArguments: [String] = []) throws -> PrivateSessionBus {
        let bus = try PrivateSessionBus(in: fixture.root)
        let environment = fixture.environment.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address]) { $1 }
        let mount = try run(BuiltProducts.executable("sitefs"),
                            ["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path,
                             "--poll-interval", "0.3", "--write-back-delay", "0.2"] + extraArguments, environment: environment)
        guard mount.status == 0 else {
            bus.stop()
            throw ProcessFailure("sitefs mount: \(mount.err)")
        }
        return bus
    }

    @Test func aFolderMadeAgainForASaveIsNotified() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let bus = try mountOnAPrivateBus(fixture)
        defer { bus.stop() }
        try FileManager.default.createDirectory(atPath: fixture.path("Riverside/doomed"), withIntermediateDirectories: false)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let folder = try #require(try fixture.serverItem("Riverside/doomed"))

        try editWhileOpen(fixture.path("Riverside/doomed/late.txt"), to: "late", creating: true) {
            _ = try fixture.api.call("DELETE", "/v1/items/\(folder.id)")
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let notice = bus.waitForNotification { ($0["summary"] as? String)?.contains("folder was made again") == true }
        let body = try #require(notice?["body"] as? String, "no notification; recorded: \(bus.recorded)")
        #expect(body == "Riverside/doomed was deleted on the server while you saved late.txt in it; it was made again with your file in it.")
    }
}

extension DesktopNotificationTests {
    /// The cache folder's disk fills up: a save that cannot be journaled fails its close()
    /// with EIO, and so does an fsync of a folder whose delete cannot be flushed; the local
    /// copy keeps the edit, `sitefs status` and a notification say why; with room again the
    /// next save goes through and the status clears.
    @Test(.enabled(if: SmallDisk.canMount, "needs root to mount a small tmpfs"))
    func aJournalThatCannotBeWrittenFailsTheSaveKeepsTheEditAndIsNotified() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let disk = try SmallDisk(bytes: 16 << 20, at: fixture.cache.path)
        fixture.mount.onTearDown { disk.unmount() }  // after the daemon is gone
        let bus = try mountOnAPrivateBus(fixture)
        defer { bus.stop() }

        // Deleted before the disk fills: recorded, not flushed until its folder is fsynced.
        #expect(try fixture.shell("printf 'old\\n' > Riverside/old.txt").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.shell("rm Riverside/old.txt").status == 0)

        // Written before the disk fills (a write-only handle's writes reach the daemon at
        // once), closed after: staging links the copy, the journal needs a new page.
        let path = fixture.path("Riverside/minutes.txt")
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0, "open: errno \(errno)")
        let edit = Array("kept on this computer\n".utf8)
        #expect(write(descriptor, edit, edit.count) == edit.count)
        try disk.fill()
        let closed = close(descriptor)
        let closeError = errno
        #expect(closed == -1 && closeError == EIO, "close() of a save that cannot be journaled: \(closed), errno \(closeError)")
        #expect(fsyncFolder(fixture.path("Riverside")) == EIO, "fsync of a folder whose delete cannot be flushed")

        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.out.contains("journal: the upload journal cannot be written"), "\(status.out)")
        let notice = bus.waitForNotification { ($0["summary"] as? String)?.contains("saves cannot be recorded") == true }
        let body = try #require(notice?["body"] as? String, "no notification; recorded: \(bus.recorded)")
        #expect(body.contains("cannot be written"), "\(body)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "kept on this computer\n", "the edit is gone")

        disk.free()
        #expect(fsyncFolder(fixture.path("Riverside")) == 0)
        let again = try fixture.shell("printf 'saved once there was room\\n' > Riverside/minutes.txt")
        #expect(again.status == 0, "\(again.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/minutes.txt") == "saved once there was room\n")
        let clear = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(!clear.out.contains("journal:"), "\(clear.out)")
        #expect(try fixture.serverItem("Riverside/old.txt") == nil, "the delete did not reach the server")
    }

    /// fsync(2) of a folder: 0, or the errno it failed with.
    private func fsyncFolder(_ path: String) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        return fsync(descriptor) == 0 ? 0 : errno
    }
}

/// `dbus-daemon --session` on a socket in a temp folder, with the notification listener
/// owning org.freedesktop.Notifications on it. `stop()` ends both.
final class PrivateSessionBus {
    let address: String
    private let daemon = Process()
    private let listener = Process()
    private let record: URL

    /// `environment` is added to the test process's for the bus and so for every service it
    /// starts: a desktop session's home and XDG folders, so that what Files activates (the
    /// document portal mounts `$XDG_RUNTIME_DIR/doc`) stays inside the test's folder.
    init(in folder: URL, environment: [String: String] = [:]) throws {
        let directory = folder.appendingPathComponent("bus")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        record = directory.appendingPathComponent("notifications.jsonl")
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--session", "--nofork", "--print-address=1", "--address=unix:dir=\(directory.path)"]
        daemon.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let addressOut = Pipe()
        daemon.standardOutput = addressOut
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        guard let address = ServerProcess.readLine(from: addressOut.fileHandleForReading, timeout: 10), address.hasPrefix("unix:") else {
            daemon.terminate()
            throw ProcessFailure("dbus-daemon did not print its address")
        }
        self.address = address

        listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        listener.arguments = [URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Support/notification_listener.py").path, "--address", address, "--record", record.path]
        let ready = Pipe()
        listener.standardOutput = ready
        try listener.run()
        guard ServerProcess.readLine(from: ready.fileHandleForReading, timeout: 15) == "ready" else {
            stop()
            throw ProcessFailure("the notification listener did not start")
        }
    }

    /// Every Notify call so far, oldest first.
    var recorded: [[String: Any]] {
        guard let text = try? String(contentsOf: record, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// The first recorded notification `matching`, waiting up to `timeout` for it.
    func waitForNotification(timeout: Duration = .seconds(30), matching: ([String: Any]) -> Bool) -> [String: Any]? {
        var found: [String: Any]?
        _ = eventually(timeout: timeout, every: .milliseconds(100)) {
            found = recorded.first(where: matching)
            return found != nil
        }
        return found
    }

    /// Ends the listener, every program the bus started (gvfsd, tracker-miner-fs-3,
    /// at-spi...: they carry the bus's address in their environment, and outlive a killed
    /// bus otherwise), and the bus.
    func stop() {
        Self.end(listener)
        for pid in Self.processes(onBus: address) where pid != getpid() && pid != daemon.processIdentifier { kill(pid, SIGKILL) }
        Self.end(daemon)
    }

    /// Processes whose environment names the bus at `address`.
    static func processes(onBus address: String) -> [pid_t] {
        guard let path = address.split(separator: ",").first, !path.isEmpty else { return [] }
        let needles = ["DBUS_SESSION_BUS_ADDRESS=" + path, "DBUS_STARTER_ADDRESS=" + path].map { Array($0.utf8) }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return environment.split(separator: 0).contains { variable in needles.contains { variable.starts(with: $0) } }
        }
    }

    /// Ends a child of the test runner and waits for it. SIGKILL: the children inherit the
    /// runner's blocked SIGTERM (Foundation's `Process` keeps the spawning thread's signal
    /// mask), so a SIGTERM would only wait out a timeout.
    static func end(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = eventually(timeout: .seconds(10)) { !process.isRunning }
    }
}

extension DesktopNotificationTests {
    /// Someone else holds plan.txt locked for editing (another device, through the API): a
    /// save here is kept as a conflict copy and the notification names the holder; once
    /// LibreOffice here has read their lock file, their release is told ("free to edit").
    @Test func aSaveOverADocumentSomeoneHoldsAndItsReleaseAreNotified() throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let bus = try mountOnAPrivateBus(fixture)
        defer { bus.stop() }
        try "original".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let item = try #require(try fixture.serverItem("Riverside/plan.txt"))
        let taken = try fixture.api.call("PUT", "/v1/items/\(item.id)/lock",
                                         json: #"{"device": "site-office", "application": "LibreOffice", "timeout": 600}"#)
        try #require(taken.status == 201, "\(taken)")
        let token = try #require((try JSONSerialization.jsonObject(with: Data(taken.body.utf8)) as? [String: Any])?["token"] as? String)

        #expect(eventually(timeout: .seconds(15)) {
            FileManager.default.fileExists(atPath: fixture.path("Riverside/.~lock.plan.txt#"))
        }, "the mount shows their lock")
        try "mine".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let conflict = bus.waitForNotification { ($0["summary"] as? String)?.contains("conflict copy") == true }
        let body = try #require(conflict?["body"] as? String, "no conflict notification; recorded: \(bus.recorded)")
        #expect(body.contains("Riverside/plan.txt is being edited by anna"), "\(body)")
        #expect(try fixture.serverContent("Riverside/plan.txt") == "original", "the holder's document is untouched")

        // LibreOffice here reads their lock file (it opens the document read-only), then they close it.
        _ = try String(contentsOfFile: fixture.path("Riverside/.~lock.plan.txt#"), encoding: .utf8)
        let released = try fixture.api.call("DELETE", "/v1/items/\(item.id)/lock", extra: ["-H", "Lock-Token: \(token)"])
        #expect(released.status == 204, "\(released)")
        let free = bus.waitForNotification { ($0["summary"] as? String)?.contains("free to edit") == true }
        let freeBody = try #require(free?["body"] as? String, "no notification; recorded: \(bus.recorded)")
        #expect(freeBody == "anna closed Riverside/plan.txt; you can open it for editing now.", "\(freeBody)")
        #expect(eventually(timeout: .seconds(15)) {
            !FileManager.default.fileExists(atPath: fixture.path("Riverside/.~lock.plan.txt#"))
        })
    }
}
