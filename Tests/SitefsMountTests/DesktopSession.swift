import Foundation
import SitefsTestSupport

/// A desktop for a test, as a person's session has one: an X server (Xvfb, on a display it
/// picks itself), a private session bus (with the notification listener on it), a home of
/// its own (so the freedesktop thumbnail cache and the file manager's settings are the
/// test's), a runtime folder of its own (where the document portal Files starts mounts its
/// FUSE filesystem), and Files (Nautilus) started in it. `stop()` ends all of it and leaves
/// nothing mounted.
///
/// `GIO_USE_VOLUME_MONITOR=unix`: without udisks (no system bus here), Nautilus 43 stays on
/// "Loading…" for any FUSE mount, sitefs's or rclone's alike.
final class DesktopSession {
    let bus: PrivateSessionBus
    /// The session user's home and XDG folders, which the bus's services see too.
    let folders: PrivateHome
    var home: URL { folders.home }
    let display: String
    private let xvfb = Process()
    private var applications: [Process] = []

    init(in folder: URL) throws {
        folders = try PrivateHome(in: folder.appendingPathComponent("desktop"))
        xvfb.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        // -displayfd: Xvfb takes the first free display and writes its number there.
        xvfb.arguments = ["-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"]
        let out = Pipe()
        xvfb.standardOutput = out
        xvfb.standardError = FileHandle.nullDevice
        try xvfb.run()
        guard let number = ServerProcess.readLine(from: out.fileHandleForReading, timeout: 15), Int(number) != nil else {
            xvfb.terminate()
            throw ProcessFailure("Xvfb did not say which display it took")
        }
        display = ":" + number
        do {
            bus = try PrivateSessionBus(in: folder, environment: folders.environment)
        } catch {
            xvfb.terminate()
            throw error
        }
    }

    /// What a program started in this session sees.
    var environment: [String: String] {
        folders.environment.merging(["DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus.address,
                                     "GIO_USE_VOLUME_MONITOR": "unix", "GSETTINGS_BACKEND": "memory", "NO_AT_BRIDGE": "1"]) { $1 }
    }

    /// The freedesktop thumbnail cache of this session's user.
    var thumbnails: URL { home.appendingPathComponent(".cache/thumbnails") }

    /// The failed-thumbnail records GNOME's thumbnail factory wrote (one per file it tried).
    var failedThumbnails: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: thumbnails.appendingPathComponent("fail/gnome-thumbnail-factory").path)) ?? []
    }

    /// Thumbnails made, at any size.
    var madeThumbnails: [String] {
        ["normal", "large", "x-large", "xx-large"].flatMap { size in
            ((try? FileManager.default.contentsOfDirectory(atPath: thumbnails.appendingPathComponent(size).path)) ?? []).map { "\(size)/\($0)" }
        }
    }

    /// Opens `folder` in a new Files window; its output goes to `log`.
    func openInFiles(_ folder: String, extraEnvironment: [String: String] = [:], log: URL) throws {
        let nautilus = Process()
        nautilus.executableURL = URL(fileURLWithPath: "/usr/bin/nautilus")
        nautilus.arguments = ["--new-window", folder]
        nautilus.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }.merging(extraEnvironment) { $1 }
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        nautilus.standardOutput = output
        nautilus.standardError = output
        nautilus.standardInput = FileHandle.nullDevice
        try nautilus.run()
        applications.append(nautilus)
    }

    /// Mounts the fixture's server as the session's user would: on its bus (notifications)
    /// and with its cache folder (thumbnails). The fixture was made with `mounting: false`.
    func mount(_ fixture: MountFixture, extraArguments: [String] = []) throws {
        let environment = fixture.environment.merging(["DBUS_SESSION_BUS_ADDRESS": bus.address,
                                                       "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path]) { $1 }
        let mount = try run(BuiltProducts.executable("sitefs"),
                            ["mount", fixture.mountURL, fixture.mountpoint.path, "--cache-dir", fixture.cache.path, "--poll-interval", "0.3",
                             "--write-back-delay", "0.2", "--log-level", "debug"] + extraArguments, environment: environment)
        guard mount.status == 0 else { throw ProcessFailure("sitefs mount: \(mount.err)") }
    }

    /// The whole screen as a PNG (ImageMagick's `import`).
    func screenshot(to file: URL) throws {
        let result = try run(URL(fileURLWithPath: "/usr/bin/import"), ["-window", "root", file.path], environment: environment)
        guard result.status == 0 else { throw ProcessFailure("import: \(result.err)") }
    }

    /// SIGKILL: children of the test runner inherit its blocked SIGTERM (Foundation's
    /// `Process` keeps the spawning thread's signal mask), so a SIGTERM would wait out the
    /// timeout; none of these programs keeps anything the test needs.
    func stop() {
        for process in applications + [xvfb] { PrivateSessionBus.end(process) }
        // What the bus started for Files (gvfsd, tracker-miner-fs-3, the document portal,
        // ...) leaves with it; a killed portal leaves its mount behind, detached here.
        bus.stop()
        let portal = folders.runtime.appendingPathComponent("doc").path
        if MountTable.isMounted(portal) { MountTable.forceUnmount(portal) }
    }

    /// Where screenshots and other records a person may want to look at after a run go.
    static var artifacts: URL {
        let folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/test-artifacts")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
