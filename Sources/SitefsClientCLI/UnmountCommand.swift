import ArgumentParser
import Foundation
import Synchronization

/// `sitefs unmount`: waits a bounded time for pending uploads, showing what it waits for,
/// and always leaves the mount point unmounted. What it gave up on stays in the journal and
/// is sent at the next mount of the same cache (the daemon is told not to go on sending).
struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Unmount, after pending uploads reached the server or the timeout passed (Ctrl-C twice: at once).",
        discussion: "Uploads not sent by then stay queued and are sent at the next mount.")

    @Argument(help: "The mount point.") var mountpoint: String
    @Flag(name: .customLong("no-wait"), help: "Unmount at once; pending uploads resume on the next mount.") var noWait = false
    @Option(help: "Seconds to wait for pending uploads before unmounting anyway.") var timeout: Double = 30

    func validate() throws {
        guard timeout >= 0 else { throw ValidationError("--timeout must not be negative") }
    }

    func run() throws {
        var gaveUp: String?
        if !noWait {
            UnmountInterrupts.install()
            do {
                let pending = try MountStatusReader.read(mountpoint).uploads.pending
                if pending > 0 {
                    FileHandle.standardError.write(Data(("waiting up to \(Int(timeout)) s for \(pending) pending uploads "
                                                         + "(Ctrl-C twice: unmount now, they stay queued)\n").utf8))
                }
                try Sync.parse([mountpoint, "--timeout", String(timeout)]).waitForUploads(until: Date().addingTimeInterval(timeout)) {
                    UnmountInterrupts.count >= 2
                }
            } catch let failure as MountStatusReader.Failure {
                if case .notMounted = failure { throw UserFacingError(failure.description) }
                // A dead daemon: nothing to wait for; unmount the stale mount below.
            } catch let error as UserFacingError {
                gaveUp = error.description
            }
        }
        // Whatever is still unsent is left to the next mount (a dead daemon cannot be told).
        var left = 0
        if noWait || gaveUp != nil, let status = try? MountStatusReader.leaveQueued(mountpoint) { left = status.uploads.pending }
        try Unmounting.unmount(mountpoint)
        if onTerminal { FileHandle.standardOutput.write(Data("\n".utf8)) }
        if let gaveUp {
            FileHandle.standardError.write(Data(("stopped waiting: \(gaveUp)\n"
                + "\(left) uploads stay queued and are sent at the next mount of \(mountpoint) (same cache)\n").utf8))
        }
        print("unmounted \(mountpoint)")
    }

    private var onTerminal: Bool { !noWait && isatty(STDOUT_FILENO) == 1 }
}

/// Ctrl-C while `sitefs unmount` waits: the first says how to stop waiting, the second stops
/// it (the unmount then goes ahead). Counted by a signal handler, read by the wait loop.
enum UnmountInterrupts {
    private static let received = Atomic<Int>(0)

    static var count: Int { received.load(ordering: .relaxed) }

    static func install() {
        // Unblocked too: a parent may have started us with SIGINT blocked (a test runner,
        // a service manager), and a blocked Ctrl-C would never arrive.
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &interrupt, nil)
        signal(SIGINT) { _ in
            let count = UnmountInterrupts.received.add(1, ordering: .relaxed).newValue
            if count == 1 {
                // Only async-signal-safe calls here: a static string and write(2).
                let hint: StaticString = "\nwaiting for uploads; Ctrl-C again to unmount now (they stay queued for the next mount)\n"
                _ = write(STDERR_FILENO, hint.utf8Start, hint.utf8CodeUnitCount)
            }
        }
    }
}
