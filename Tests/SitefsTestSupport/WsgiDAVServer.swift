import Foundation

/// A real WebDAV server nobody here wrote: WsgiDAV (PyPI `wsgidav` on `cheroot`, installed by
/// scripts/test), serving a directory of the test's on 127.0.0.1 with anonymous access. The
/// test changes the directory to change the server, and checks the server's disk to check
/// what a client did.
public final class WsgiDAVServer: @unchecked Sendable {
    /// `http://127.0.0.1:PORT`.
    public let baseURL: String
    public let root: URL
    private let logFile: URL

    /// Starts WsgiDAV on an unused port and waits until it says it is serving; tries a few
    /// ports, since another process may take the one picked before WsgiDAV binds it. With
    /// `propertyManager`, WsgiDAV keeps dead properties (PROPPATCH; in memory, for as long as
    /// it runs: its `property_manager: true`); without, as by default, it refuses them (403).
    public init(root: URL, propertyManager: Bool = false) throws {
        self.root = root
        logFile = root.deletingLastPathComponent().appendingPathComponent("wsgidav-\(UUID().uuidString).log")
        var configuration: [String] = []
        if propertyManager {
            let file = root.deletingLastPathComponent().appendingPathComponent("wsgidav-\(UUID().uuidString).yaml")
            try Data("property_manager: true\n".utf8).write(to: file)
            configuration = ["--config", file.path]
        }
        var lastError = ""
        for _ in 0..<3 {
            let port = try TestServer.unusedPort()
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // The console script's own entry point: found wherever pip put the package,
            // whether or not its scripts folder is on PATH.
            process.arguments = ["python3", "-c", "import sys; from wsgidav.server.server_cli import run; sys.argv[0] = 'wsgidav'; run()",
                                 "--host", "127.0.0.1", "--port", String(port), "--root", root.path, "--auth", "anonymous"]
                + configuration
            let log = try FileHandle(forWritingTo: logFile)
            process.standardOutput = log
            process.standardError = log
            try process.run()
            // Ready when this server (not another test's that took the port) serves a file
            // only its root has: WsgiDAV says "Serving on" before it has bound the port.
            let url = "http://127.0.0.1:\(port)"
            let marker = ".sitefs-ready-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: root.appendingPathComponent(marker).path, contents: Data("ready".utf8))
            var ready = false
            _ = eventually(timeout: .seconds(30), every: .milliseconds(50)) {
                guard process.isRunning else { return true }
                ready = (try? run(URL(fileURLWithPath: "/usr/bin/curl"), ["-q", "-s", "--noproxy", "*", "--max-time", "5", "\(url)/\(marker)"],
                                  timeout: 10))?.out == "ready"
                return ready
            }
            try? FileManager.default.removeItem(at: root.appendingPathComponent(marker))
            if ready, process.isRunning {
                started = process
                baseURL = url
                return
            }
            lastError = Self.text(of: logFile)
            ChildProcess.stop(process, grace: .seconds(1))
        }
        throw ProcessFailure("WsgiDAV did not start (is it installed? scripts/test installs it): \(lastError.suffix(2000))")
    }

    /// The process that is serving.
    private var started: Process?

    /// What WsgiDAV logged so far.
    public var log: String { Self.text(of: logFile) }

    /// SIGTERM, then SIGKILL after a second: cheroot takes about 15 s to stop by itself, and
    /// a throwaway server has nothing to flush (its disk is the test's to check).
    public func stop() {
        guard let started, started.isRunning else { return }
        ChildProcess.stop(started, grace: .seconds(1))
    }

    deinit { stop() }

    private static func text(of file: URL) -> String {
        (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }
}

extension WsgiDAVServer: WebDAVTestServer {
    /// WsgiDAV's `baseURL`.
    public var origin: String { baseURL }
    /// WsgiDAV serves `root` as the whole server.
    public var collectionPath: String { "/" }
    /// WsgiDAV runs as the test's user.
    public var diskOwner: TestAccount? { nil }
}
