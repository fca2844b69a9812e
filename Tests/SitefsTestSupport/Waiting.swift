import Foundation

/// Polls `condition` every `interval` until it holds or `timeout` has passed, and says
/// whether it held: the one bounded wait of every test suite, for what background work
/// (an upload, a poll of the change feed, a daemon's exit) makes true eventually. A test of
/// a race does not use it to wait out the race; it controls time with a hook instead.
public func eventually(timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(25),
                       _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
    }
}

/// `eventually` for async tests: polls with `Task.sleep`, so the wait holds no thread of the
/// cooperative pool while what it waits for (a server's tasks, a background thumbnail) needs
/// one.
public func eventually(timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(25),
                       _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// `eventually` for async tests whose condition does not itself wait: what an async test's
/// `await eventually { ... }` resolves to. Without it, that call resolves to the blocking
/// `eventually` (its closure type needs no conversion), whose `Thread.sleep` holds a thread
/// of the cooperative pool (there are two on a 2-core machine) that the server under test
/// needs to make the condition true.
public func eventually(timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(25),
                       _ condition: () throws -> Bool) async rethrows -> Bool {
    try await eventually(timeout: timeout, every: interval) { () async throws -> Bool in try condition() }
}

/// Whether this machine can mount FUSE filesystems. The real-mount suites are enabled by
/// it; CI always can (`scripts/test` installs fuse3), so there they always run.
public let fuseAvailable = FileManager.default.fileExists(atPath: "/dev/fuse")
