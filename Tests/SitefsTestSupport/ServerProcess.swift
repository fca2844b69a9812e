import Foundation
import Testing

/// The project's executables, built next to the test runner.
public enum BuiltProducts {
    public static func executable(_ name: String) -> URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
    }
}

/// The real `sitefs-server` executable, run as a child process the way users and scripts
/// run it. Every wait has a deadline, and `stop()` always reaps the process.
public final class ServerProcess: @unchecked Sendable {
    public static var executable: URL { BuiltProducts.executable("sitefs-server") }

    public let process = Process()
    public let baseURL: String
    private let stderrFile: URL

    /// Starts `sitefs-server serve --data DIR --port 0 ...` and waits for its first stdout line.
    public convenience init(dataDirectory: URL, extraArguments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        try self.init(storage: ["--data", dataDirectory.path], logFolder: dataDirectory.deletingLastPathComponent(),
                      extraArguments: extraArguments, sourceLocation: sourceLocation)
    }

    /// Starts `sitefs-server serve STORAGE --port 0 ...` (e.g. `--database URL --blobs DIR`)
    /// with `environment` added to this process's (a database password), its stderr in a
    /// file in `logFolder`, and waits for its first stdout line.
    public init(storage: [String], environment: [String: String] = [:], logFolder: URL, extraArguments: [String] = [],
                sourceLocation: SourceLocation = #_sourceLocation) throws {
        stderrFile = logFolder.appendingPathComponent("stderr-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process.executableURL = Self.executable
        process.arguments = ["serve"] + storage + ["--port", "0"] + extraArguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        guard let line = Self.readLine(from: stdout.fileHandleForReading, timeout: 30) else {
            process.terminate()
            process.waitUntilExit()
            throw ProcessFailure("sitefs-server printed no 'listening on' line within 30 s; stderr: \(Self.text(of: stderrFile))")
        }
        let prefix = "listening on "
        try #require(line.hasPrefix(prefix + "http://127.0.0.1:") || line.hasPrefix(prefix + "https://127.0.0.1:"),
                     "first line was \(line.debugDescription)", sourceLocation: sourceLocation)
        baseURL = String(line.dropFirst(prefix.count))
    }

    /// What the server wrote to stderr so far (its request log).
    public var log: String { Self.text(of: stderrFile) }

    /// SIGTERM, then SIGKILL after a deadline. Returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        ChildProcess.stop(process, grace: .seconds(15))
    }

    deinit { stop() }

    private static func text(of file: URL) -> String {
        (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    }

    /// The first line `handle` gives within `timeout`, without its newline: a deadline, so a
    /// program that never starts fails the test instead of hanging it.
    public static func readLine(from handle: FileHandle, timeout: TimeInterval) -> String? {
        var collected = Data()
        let deadline = Date().addingTimeInterval(timeout)
        let fd = handle.fileDescriptor
        while Date() < deadline {
            var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pollfd, 1, 100) >= 0 else { return nil }
            guard pollfd.revents != 0 else { continue }
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: collected, as: UTF8.self) }
            collected.append(byte)
        }
        return nil
    }
}

public struct ProcessFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// curl, as a user would call the API. Secrets go through stdin or a header file, not argv.
public struct Curl: Sendable {
    public let baseURL: String
    public var token: String?

    public init(baseURL: String, token: String? = nil) {
        self.baseURL = baseURL
        self.token = token
    }

    static let executable = URL(fileURLWithPath: "/usr/bin/curl")

    /// `output`: where the body goes (binary content), instead of the returned text.
    public func call(_ method: String, _ path: String, json: String? = nil, extra: [String] = [],
                     output: URL? = nil) throws -> (status: Int, body: String) {
        var arguments = ["-sS", "--max-time", "20", "-X", method, "-o", output?.path ?? "-", "-w", "\n%{http_code}", baseURL + path]
        var stdin: String?
        if let json {
            arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
            stdin = json
        }
        // The token goes in a private header file, never on curl's command line.
        let headerFile = FileManager.default.temporaryDirectory.appendingPathComponent("curl-auth-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: headerFile) }
        if let token {
            _ = FileManager.default.createFile(atPath: headerFile.path, contents: Data("Authorization: Bearer \(token)\n".utf8),
                                           attributes: [.posixPermissions: 0o600])
            arguments += ["-H", "@\(headerFile.path)"]
        }
        let result = try run(Self.executable, arguments + extra, stdin: stdin, timeout: 30)
        guard result.status == 0, let split = result.out.lastIndex(of: "\n"), let status = Int(result.out[result.out.index(after: split)...]) else {
            throw ProcessFailure("curl failed (\(result.status)): \(result.err)")
        }
        return (status, String(result.out[..<split]))
    }
}
