import Foundation

/// What a program run to its end said: its exit status, stdout and stderr.
public typealias ProcessOutcome = (status: Int32, out: String, err: String)

/// The one way the test suites run a program to its end (curl, `sitefs login`, psql, ls
/// through a mount, useradd): every run has a deadline, and a program that outlives it is
/// killed with its process group and reaped before the call throws, so no test hangs on a
/// child and none leaves one behind.
///
/// Output goes through files, not pipes, so a program that writes much (a large listing)
/// never stalls on a full pipe while nobody reads it. `stdin`, when given, is written and
/// closed; otherwise stdin is /dev/null.
///
/// `environment` is added to this process's environment, or with `inheritEnvironment`
/// false it is the whole environment (`ls` with `LC_ALL=C` only, psql without the
/// machine's PG* variables). `onTimeout` runs before the kill: a program stuck in a call to a
/// test's own FUSE mount is freed by ending that mount first.
///
/// The exit is seen through Foundation's termination handler, so only programs that leave
/// nothing running behind them belong here: a daemon they start would keep Foundation's
/// exit-watching descriptor open and the wait would run to its deadline. Long-running
/// children (servers, the mount daemon) are started by their own types and stopped with
/// `ChildProcess.stop`.
@discardableResult
public func run(_ executable: URL, _ arguments: [String], stdin: String? = nil, timeout: TimeInterval = 60,
                environment: [String: String]? = nil, inheritEnvironment: Bool = true, directory: URL? = nil,
                onTimeout: (() -> Void)? = nil) throws -> ProcessOutcome {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if inheritEnvironment {
        if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    } else {
        process.environment = environment ?? [:]
    }
    if let directory { process.currentDirectoryURL = directory }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
    defer { try? out.close(); try? err.close() }
    process.standardOutput = out
    process.standardError = err
    let input = stdin.map { _ in Pipe() }
    process.standardInput = input ?? FileHandle.nullDevice
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    if let input {
        input.fileHandleForWriting.write(Data(stdin!.utf8))
        try? input.fileHandleForWriting.close()
    }
    guard exited.wait(timeout: .now() + timeout) == .success else {
        onTimeout?()
        ChildProcess.kill(process)
        _ = exited.wait(timeout: .now() + 10)
        let said = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        throw ProcessFailure("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s"
                             + (said.isEmpty ? "" : "; stderr: \(said.suffix(2000))"))
    }
    process.waitUntilExit()  // returns at once: the handler ran, the child is reaped
    return (process.terminationStatus, (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

/// Stopping the long-running children the tests start (servers, WebDAV daemons,
/// PostgreSQL): a signal, a bounded wait for the exit, then SIGKILL to the process group.
public enum ChildProcess {
    /// Waits up to `timeout` for `process` to exit; true when it has.
    public static func waitForExit(_ process: Process, timeout: Duration) -> Bool {
        eventually(timeout: timeout, every: .milliseconds(10)) { !process.isRunning }
    }

    /// SIGTERM (unless `terminating` is false: something else, e.g. pg_ctl, already asked it
    /// to stop), up to `grace` for the exit, then SIGKILL to its process group, `alsoKilling`
    /// and itself; reaped. Returns the exit status. Foundation's Process spawns each child in a
    /// process group of its own (POSIX_SPAWN_SETPGROUP), so the group holds what it forked.
    @discardableResult
    public static func stop(_ process: Process, grace: Duration, terminating: Bool = true,
                            alsoKilling others: (() -> [pid_t])? = nil) -> Int32 {
        if process.isRunning {
            if terminating { process.terminate() }
            if !waitForExit(process, timeout: grace) {
                for other in others?() ?? [] { Glibc.kill(other, SIGKILL) }
                kill(process)
            }
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL to `process`'s group and to itself (a child that made a group of its own).
    public static func kill(_ process: Process) {
        let pid = process.processIdentifier
        guard pid > 0 else { return }
        Glibc.kill(-pid, SIGKILL)
        Glibc.kill(pid, SIGKILL)
    }
}
