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

/// Whether this machine can mount FUSE filesystems. The real-mount suites are enabled by
/// it; CI always can (`scripts/test` installs fuse3), so there they always run.
public let fuseAvailable = FileManager.default.fileExists(atPath: "/dev/fuse")
