import CFuse
import Glibc
import SitefsCore
import SystemPackage
import Synchronization

/// Mounts a `FilesystemOperations` with libfuse and serves it until it is unmounted.
///
/// ```swift
/// let mount = FUSEMount(operations: core, mountpoint: "/mnt/site", options: MountOptions(fsName: url))
/// try mount.run()          // blocks; returns after unmount or requestExit()
/// ```
///
/// Lifecycle (guarded by one mutex, `lifecycle`): idle -> starting -> running -> stopping
/// -> finished. While *running*, `requestExit()` may use the session pointer, and only
/// under the mutex; `run()` moves to *stopping* under the same mutex before it unmounts
/// and destroys the session, so no other thread can touch a freed session. The
/// invalidator has its own lock and is stopped (and drained) before destruction too.
/// Lock order: `lifecycle` is held only around `fuse_session_exit` / `fuse_session_exited`
/// (flag accesses that cannot block), never while calling into the core, ringing the
/// doorbell, or taking the invalidator's lock.
public final class FUSEMount: Sendable {
    public enum Status: Sendable, Equatable {
        case idle
        case starting
        /// The kernel mount exists; requests are being served (or queued until they are).
        case mounted
        case stopping
        case finished
    }

    private enum Lifecycle {
        case idle(exitRequested: Bool)
        case starting(exitRequested: Bool)
        case running(SessionPointer, mountpoint: String)
        case stopping
        case finished
    }

    public let mountpoint: String
    public let options: MountOptions
    private let session: SessionState
    private let lifecycle = Mutex<Lifecycle>(.idle(exitRequested: false))

    public init(operations: any FilesystemOperations, mountpoint: String, options: MountOptions = MountOptions()) {
        self.session = SessionState(operations: operations, readDirectoryPlus: options.readDirectoryPlus)
        self.mountpoint = mountpoint
        self.options = options
    }

    public var status: Status {
        lifecycle.withLock { state in
            switch state {
            case .idle: .idle
            case .starting: .starting
            case .running: .mounted
            case .stopping: .stopping
            case .finished: .finished
            }
        }
    }

    /// How a session that ran ended.
    public enum Ending: Sendable, Equatable {
        /// Unmounted (`umount`, `fusermount3 -u`), or `requestExit()`, or never started.
        case unmounted
        /// SIGINT, SIGTERM or SIGHUP, with `MountOptions.handleSignals`: the process is
        /// being stopped (Ctrl-C, systemd's stop), not just its mount.
        case signal(Int32)
    }

    /// Mounts, serves requests on up to `options.maxThreads` threads, and returns once the
    /// filesystem is unmounted (`umount`, `fusermount3 -u`) or `requestExit()` was called;
    /// the kernel mount is gone when it returns. Call it once per `FUSEMount`.
    @discardableResult
    public func run() throws(FUSEMountError) -> Ending {
        guard try claimStart() else { return .unmounted }
        defer { lifecycle.withLock { $0 = .finished } }

        let path = try MountpointValidation.canonicalPath(mountpoint)
        let arguments = SessionArguments(["sitefs", "-o", options.mountOptionList] + (options.debug ? ["-d"] : []))
        var table = makeLowLevelOperations()
        let created = arguments.withArguments { arguments in
            fuse_session_new(&arguments, &table, MemoryLayout<fuse_lowlevel_ops>.size, session.userdata)
        }
        guard let created else { throw .sessionCreationFailed }
        let fuseSession = SessionPointer(pointer: created)
        session.invalidator.attach(fuseSession)

        errno = 0
        guard fuse_session_mount(created, path) == 0 else {
            let code = errno
            session.invalidator.stop()
            fuse_session_destroy(created)
            throw .mountFailed(path, code == 0 ? nil : Errno(rawValue: code))
        }

        // Before the mount is reported as running, so a signal sent once `status` says
        // `.mounted` always finds the handlers in place.
        let signalsInstalled = options.handleSignals && fuse_set_signal_handlers(created) == 0
        if signalsInstalled { Self.unblockStopSignals() }
        let exitRequested = lifecycle.withLock { state in
            guard case .starting(let exitRequested) = state else { preconditionFailure("FUSEMount state changed while starting") }
            state = .running(fuseSession, mountpoint: path)
            return exitRequested
        }
        if exitRequested { fuse_session_exit(created) }
        if signalsInstalled { SignalExitWatcher.start(self) }

        let loopResult = serve(created)

        // From here on no other thread may use the session pointer.
        lifecycle.withLock { $0 = .stopping }
        session.invalidator.stop()
        let invalidatorIdle = session.invalidator.waitUntilIdle(timeout: .seconds(5))
        if signalsInstalled { fuse_remove_signal_handlers(created) }
        // Closes the device fd (which ends the kernel connection when nothing else holds
        // it) and lazily unmounts, so this cannot hang on files still open in the mount.
        fuse_session_unmount(created)
        if invalidatorIdle {
            fuse_session_destroy(created)   // calls `destroy` -> operations.unmounting()
        } else {
            // A notification is stuck inside libfuse; freeing the session under it would be
            // a use-after-free, so leak the session and tell the core ourselves.
            let warning = "sitefs: a cache invalidation did not finish; leaving the FUSE session allocated\n"
            _ = warning.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            if session.isInitialized.exchange(false, ordering: .sequentiallyConsistent) {
                session.operations.unmounting()
            }
        }
        withExtendedLifetime(arguments) {}

        // 0: unmounted; > 0: the signal that ended it (handleSignals); < 0: -errno.
        if loopResult < 0 {
            throw .sessionFailed(Errno(rawValue: -loopResult))
        }
        return loopResult > 0 ? .signal(loopResult) : .unmounted
    }

    /// Makes `run()` unmount and return soon, from any thread, including a FUSE callback.
    /// Not async-signal-safe: for signals use `MountOptions.handleSignals`, or a dispatch
    /// signal source that calls this. Before `run()` it makes `run()` return at once.
    ///
    /// How the loop is woken: `fuse_session_exit` only sets a flag that libfuse's workers
    /// check between requests, and they are blocked reading /dev/fuse, so something has to
    /// send the session one more request: `LoopDoorbell` calls statfs(2) on the mountpoint
    /// from a short-lived thread. The worker that reads that request sees the flag and ends
    /// the loop; the statfs itself returns when teardown closes the connection. This works
    /// while files are still open in the mount (an unmount would wait for them) and needs
    /// neither a signal handler nor fusectl.
    public func requestExit() {
        // Let running invalidations finish while the loop can still serve what they wait on.
        session.invalidator.stop()
        _ = session.invalidator.waitUntilIdle(timeout: .seconds(5))

        let doorbellPath: String? = lifecycle.withLock { state in
            switch state {
            case .idle:
                state = .idle(exitRequested: true)
            case .starting:
                state = .starting(exitRequested: true)
            case .running(let fuseSession, let path):
                fuse_session_exit(fuseSession.pointer)
                return path
            case .stopping, .finished:
                break
            }
            return nil
        }
        if let doorbellPath {
            LoopDoorbell.ring(mountpoint: doorbellPath)
        }
    }

    /// For `SignalExitWatcher`: whether libfuse's signal handler has flagged the running
    /// session for exit; nil once the session is no longer running.
    func sessionExitFlagged() -> Bool? {
        lifecycle.withLock { state in
            guard case .running(let fuseSession, _) = state else { return nil }
            return fuse_session_exited(fuseSession.pointer) != 0
        }
    }

    /// A parent may start the process with these signals blocked (a test runner, a shell's
    /// background job), and blocked in every thread they would stay pending and the mount
    /// could not be stopped. libfuse's workers block them for themselves; this thread, which
    /// waits in the loop, takes them.
    private static func unblockStopSignals() {
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&stopSignals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
    }

    /// idle -> starting; false if an exit was requested before `run()`.
    private func claimStart() throws(FUSEMountError) -> Bool {
        let claimed: Bool? = lifecycle.withLock { state in
            guard case .idle(let exitRequested) = state else { return nil }
            state = exitRequested ? .finished : .starting(exitRequested: false)
            return !exitRequested
        }
        guard let claimed else { throw .alreadyStarted }
        return claimed
    }

    /// libfuse's multi-threaded loop: one device fd shared by all workers (clone_fd 0),
    /// workers created on demand up to `maxThreads`, at most `maxIdleThreads` kept idle.
    private func serve(_ fuseSession: OpaquePointer) -> Int32 {
        guard let configuration = fuse_loop_cfg_create() else { return -ENOMEM }
        defer { fuse_loop_cfg_destroy(configuration) }
        let maxThreads = max(options.maxThreads, 1)
        fuse_loop_cfg_set_clone_fd(configuration, 0)
        fuse_loop_cfg_set_max_threads(configuration, UInt32(maxThreads))
        fuse_loop_cfg_set_idle_threads(configuration, UInt32(min(max(options.maxIdleThreads, 1), maxThreads)))
        return sitefs_session_loop_mt(fuseSession, configuration)
    }
}
