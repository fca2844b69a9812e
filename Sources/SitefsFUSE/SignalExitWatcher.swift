import Glibc

/// With `MountOptions.handleSignals`, libfuse's SIGINT/SIGTERM/SIGHUP handler only sets the
/// session's exit flag. That ends the loop at once only if the signal happens to interrupt
/// the thread blocked in `fuse_session_loop_mt` (the kernel picks which thread handles a
/// process signal, and libfuse's workers block these signals). This watcher closes the gap:
/// every 100 ms it checks the flag while the session runs, and when a signal has set it,
/// calls `requestExit()`, which rings the doorbell so the loop ends whichever thread took
/// the signal.
///
/// It runs on its own detached thread holding a strong reference to the mount, and ends
/// as soon as the session is no longer running.
enum SignalExitWatcher {
    static let interval: useconds_t = 100_000

    static func start(_ mount: FUSEMount) {
        let context = Unmanaged.passRetained(mount).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { context in
            let mount = Unmanaged<FUSEMount>.fromOpaque(context!).takeRetainedValue()
            while true {
                usleep(SignalExitWatcher.interval)
                switch mount.sessionExitFlagged() {
                case nil:
                    return nil
                case true?:
                    mount.requestExit()
                    return nil
                case false?:
                    continue
                }
            }
        }, context)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<FUSEMount>.fromOpaque(context).release()
        }
    }
}
