import Foundation
import SitefsCore
import SitefsFUSE
import SitefsTestSupport
import Synchronization
import Testing

/// A real FUSE mount of a test filesystem in a fresh temporary directory, served by this
/// test process on a background thread.
///
/// Nothing here can hang a test run: every wait has a deadline; when a filesystem call
/// does not return in time the mount is torn down (which makes the stuck call fail with
/// ENOTCONN) and the test fails with a timeout. `tearDown()` always leaves no mount behind,
/// falling back to `fusermount3 -u -z` if the session did not end by itself.
final class TestMount: Sendable {
    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out: \(what)" }
    }

    let filesystem: InMemoryFilesystem
    let mountpoint: String
    let mount: FUSEMount
    private let finished = DispatchSemaphore(value: 0)
    private let runError = Mutex<FUSEMountError?>(nil)

    /// Mounts and waits until the mount answers a stat of its root.
    static func start(_ filesystem: InMemoryFilesystem = InMemoryFilesystem(),
                      options: MountOptions = MountOptions(fsName: "sitefs-test")) throws -> TestMount {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sitefs-fuse-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let mount = TestMount(filesystem: filesystem, mountpoint: directory, options: options)
        do {
            try mount.waitUntilServing()
        } catch {
            mount.tearDown()
            throw error
        }
        return mount
    }

    private init(filesystem: InMemoryFilesystem, mountpoint: String, options: MountOptions) {
        self.filesystem = filesystem
        self.mountpoint = mountpoint
        self.mount = FUSEMount(operations: filesystem, mountpoint: mountpoint, options: options)
        let thread = Thread { [self] in
            do throws(FUSEMountError) {
                try mount.run()
            } catch {
                runError.withLock { $0 = error }
            }
            finished.signal()
        }
        thread.name = "sitefs-test-fuse-run"
        thread.start()
    }

    private func waitUntilServing() throws {
        // Mounted, or `run()` ended (with or without an error) before mounting.
        let settled = eventually(timeout: .seconds(20), every: .milliseconds(5)) {
            mount.status == .mounted || mount.status == .finished || runError.withLock { $0 } != nil
        }
        if let error = runError.withLock({ $0 }) { throw error }
        if mount.status == .finished { throw Timeout(what: "run() ended before mounting") }
        guard settled else { throw Timeout(what: "mounting \(mountpoint)") }
        let root = mountpoint
        try perform("stat of the mount root") {
            var status = stat()
            try Syscall.check(stat(root, &status), "stat \(root)")
        }
    }

    func path(_ relative: String) -> String {
        relative.isEmpty ? mountpoint : mountpoint + "/" + relative
    }

    /// Runs a filesystem action on its own thread with a deadline.
    func perform<T: Sendable>(_ what: String, timeout: TimeInterval = 30,
                              _ body: @escaping @Sendable () throws -> T) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let result = Result<T, any Error>(catching: body)
            outcome.withLock { $0 = result }
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + timeout) == .success else {
            abortMount()
            throw Timeout(what: what)
        }
        return try outcome.withLock { $0! }.get()
    }

    /// Runs a program (ls, cat, stat, ...) with the shared runner, in the C locale. Past
    /// `timeout` the mount is ended first (a program stuck in a call to it then gets ENOTCONN)
    /// and the runner throws.
    func runProgram(_ executable: String, _ arguments: [String], timeout: TimeInterval = 60) throws -> ProcessOutcome {
        try run(URL(fileURLWithPath: executable), arguments, timeout: timeout,
                environment: ["LC_ALL": "C", "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"], inheritEnvironment: false,
                onTimeout: { self.abortMount() })
    }

    /// Ends the session the way the daemon would, waits for `run()` to return, and makes
    /// sure nothing is left mounted. Records an issue (never throws) when that took force.
    func tearDown() {
        mount.requestExit()
        if finished.wait(timeout: .now() + 20) == .timedOut {
            Issue.record("FUSEMount.run() did not return within 20 s of requestExit(); forcing the unmount")
            forceUnmount()
            _ = finished.wait(timeout: .now() + 10)
        } else {
            finished.signal()   // keep the semaphore signalled for repeated tearDown calls
        }
        if isMounted {
            Issue.record("\(mountpoint) was still mounted after run() returned")
            forceUnmount()
        }
        try? FileManager.default.removeItem(atPath: mountpoint)
    }

    /// The error `run()` ended with, once it has returned.
    func waitForRunToEnd(timeout: TimeInterval = 20) -> (ended: Bool, error: FUSEMountError?) {
        guard finished.wait(timeout: .now() + timeout) == .success else { return (false, nil) }
        finished.signal()
        return (true, runError.withLock { $0 })
    }

    var isMounted: Bool { MountTable.isMounted(mountpoint) }

    private func abortMount() {
        mount.requestExit()
        if finished.wait(timeout: .now() + 10) == .timedOut {
            forceUnmount()
        } else {
            finished.signal()
        }
    }

    private func forceUnmount() { MountTable.forceUnmount(mountpoint) }
}
