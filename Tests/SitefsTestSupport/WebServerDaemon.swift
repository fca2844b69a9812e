import Foundation

/// Starting and stopping the web servers the WebDAV tests run as children (Apache, nginx):
/// a master process in the foreground that forks workers, ready only once it serves.
enum WebServerDaemon {
    /// Calls `start` with unused ports until the server it starts serves a marker file made
    /// in `root`, found at `collectionURL(port)`; returns that server and its port. Another
    /// process may take the port picked before the server binds it (the server then exits),
    /// and only a marker of this test's tells this server from another that took the port.
    static func launch(_ name: String, root: URL, credentials: BasicCredentials?, log: () -> String,
                       start: (UInt16) throws -> (process: Process, collectionURL: String)) throws -> (process: Process, port: UInt16) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else { throw ProcessFailure("curl is not installed") }
        for _ in 0..<3 {
            let port = try TestServer.unusedPort()
            let (process, collectionURL) = try start(port)
            let marker = ".sitefs-ready-\(UUID().uuidString)"
            let markerFile = root.appendingPathComponent(marker)
            // Readable by the server whichever account it serves as.
            try Data("ready".utf8).write(to: markerFile)
            chmod(markerFile.path, 0o644)
            let ready = serves(collectionURL + marker, process: process, credentials: credentials)
            try? FileManager.default.removeItem(at: markerFile)
            if ready { return (process, port) }
            stop(process)
        }
        throw ProcessFailure("\(name) did not start: \(log().suffix(3000))")
    }

    private static func serves(_ url: String, process: Process, credentials: BasicCredentials?) -> Bool {
        var ready = false
        _ = eventually(timeout: .seconds(30), every: .milliseconds(50)) {
            guard process.isRunning else { return true }
            // Credentials as a config on stdin (`-K -`), off argv.
            let answer = try? run(URL(fileURLWithPath: "/usr/bin/curl"), ["-q", "-s", "--noproxy", "*", "--max-time", "5", "-K", "-", url],
                                  stdin: credentials?.curlConfig ?? "", timeout: 10)
            ready = answer?.out == "ready"
            return ready
        }
        return ready
    }

    /// SIGTERM to the master, which stops its workers and exits; after `grace`, SIGKILL to the
    /// master and its workers, since a master killed alone leaves its workers serving (Apache's
    /// do). The workers are the master's children and in its process group, one of its own:
    /// Foundation's Process spawns with POSIX_SPAWN_SETPGROUP.
    static func stop(_ process: Process, grace: Duration = .seconds(10)) {
        guard process.isRunning else { return }
        let master = process.processIdentifier
        ChildProcess.stop(process, grace: grace) {
            (try? String(contentsOfFile: "/proc/\(master)/task/\(master)/children", encoding: .utf8))?
                .split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) } ?? []
        }
    }

    /// The text of a log file, empty while there is none.
    static func text(of file: URL) -> String {
        (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }
}
