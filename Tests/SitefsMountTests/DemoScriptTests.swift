import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// `scripts/demo` as a user runs it in a terminal: an edit, then Ctrl-C at once. Ctrl-C
/// goes to the terminal's whole foreground process group; the demo must unmount first
/// (sending the edit), keep its server out of that Ctrl-C, and leave nothing running.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct DemoScriptTests {
    @Test func ctrlCRightAfterAnEditUnmountsSendsTheEditAndStopsEverything() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-demo-\(UUID().uuidString.prefix(8))")
        let data = root.appendingPathComponent("server"), mountpoint = root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer {
            MountTable.release(mountpoint.path)
            // The demo's server runs in a session of its own: a kill of the demo's group misses it.
            for pid in Self.servers(on: data.path) { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(at: root)
        }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let output = root.appendingPathComponent("demo.out")
        FileManager.default.createFile(atPath: output.path, contents: nil)

        // Started as a terminal starts a foreground job: leading a process group of its own,
        // no signal blocked or ignored (the test runner's threads block most, and a child
        // would inherit that).
        let demo = Process()
        demo.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        demo.arguments = ["-c", """
            import os, signal, sys
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT): signal.signal(number, signal.SIG_DFL)
            if os.getpgid(0) != os.getpid(): os.setsid()  # Process may have made it a group leader already
            os.execv(sys.argv[1], sys.argv[1:])
            """, repository.appendingPathComponent("scripts/demo").path, mountpoint.path]
        demo.environment = ProcessInfo.processInfo.environment.merging([
            "SITEFS_DEMO_DATA": data.path, "SITEFS_DEMO_PORT": "0",
            "SITEFS_DEMO_BIN": BuiltProducts.executable("sitefs").deletingLastPathComponent().path,
            "XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
            "XDG_CACHE_HOME": root.appendingPathComponent("cache").path,
        ]) { $1 }
        demo.standardOutput = try FileHandle(forWritingTo: output)
        demo.standardError = try FileHandle(forWritingTo: output)
        demo.standardInput = FileHandle.nullDevice
        try demo.run()
        defer { if demo.isRunning { kill(-demo.processIdentifier, SIGKILL) } }
        var said: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        try #require(eventually(timeout: .seconds(120)) { said.contains("sitefs demo:") || !demo.isRunning } && demo.isRunning, "\(said)")

        let readme = mountpoint.appendingPathComponent("Riverside School/README.txt").path
        let handle = try #require(FileHandle(forUpdatingAtPath: readme))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("checked by the demo test\n".utf8))
        try handle.close()
        // Ctrl-C at once, well inside the write-back delay: to the whole process group.
        kill(-demo.processIdentifier, SIGINT)
        try #require(eventually(timeout: .seconds(60)) { !demo.isRunning }, "the demo did not stop: \(said)")
        #expect(said.contains("demo stopped"), "\(said)")
        #expect(!MountTable.isMounted(mountpoint.path), "\(said)")
        // Unmounted, the daemon ends by itself a moment later (its unmount does not wait for that).
        #expect(eventually(timeout: .seconds(10)) { MountTable.daemons(serving: mountpoint.path).isEmpty })
        #expect(!Self.serverRunning(on: data.path), "the demo's server outlived it")

        // The edit reached the server before it stopped.
        let server = try ServerProcess(dataDirectory: data)
        defer { server.stop() }
        var client = Curl(baseURL: server.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"demo","password":"demo"}"#)
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        let item = try #require(try client.item(atPath: "Riverside School/README.txt"))
        #expect(try client.call("GET", "/v1/items/\(item.id)/content").body.hasSuffix("checked by the demo test\n"))
    }

    /// Whether a sitefs-server serving `data` is still running.
    private static func serverRunning(on data: String) -> Bool { !servers(on: data).isEmpty }

    /// The sitefs-server processes serving `data`.
    private static func servers(on data: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            return arguments.contains(data) && arguments.contains("serve")
        }
    }
}
