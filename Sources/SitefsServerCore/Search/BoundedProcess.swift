import Foundation

/// A helper program (pdftotext) run for one document, whose output is handed over as it
/// comes and which never outlives its deadline.
///
/// Why a child process: a parser of hostile bytes that crashes or loops there takes down or
/// stalls only itself, and a deadline can be enforced on it (a kill), which no in-process
/// library call allows. Foundation's `Process` starts it with posix_spawn (never fork, which
/// a threaded server must not), in a process group of its own, with no descriptor of the
/// server's but its stdout pipe, stdin and stderr on /dev/null, and only the environment
/// given here.
///
/// What holds when `run` returns or throws: the child has been reaped (or, in the one case a
/// killed child is not seen to exit within `reapGrace`, has been sent SIGKILL and is left
/// to Foundation's reaper), and its pipe is closed. The output is read with `poll` against
/// the deadline, so a child that writes nothing and never exits is killed at the deadline,
/// not waited on; a consumer that throws (the text is full) has the child killed at once.
enum BoundedProcess {
    enum Ending: Equatable, Sendable {
        case exited(Int32)
        /// Killed by a signal it did not handle (a crash: SIGSEGV, SIGABRT).
        case signaled(Int32)
    }

    /// How long a killed child is waited for before giving up on seeing it exit.
    static let reapGrace: Duration = .seconds(5)
    static let chunkBytes = 64 << 10

    /// Runs `executable` to its end, handing each piece of its stdout to `consume`. Throws
    /// `.timeLimit` at the deadline, what `consume` throws, or `.failed` when it cannot start.
    static func run(executable: String, arguments: [String], environment: [String: String],
                    deadline: ContinuousClock.Instant,
                    consume: (UnsafeBufferPointer<UInt8>) throws(ExtractionStop) -> Void) throws(ExtractionStop) -> Ending {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            throw .failed("\((executable as NSString).lastPathComponent) could not be started: \(error)")
        }
        // Foundation closed the pipe's write end in this process: the read end sees EOF once
        // the child (and anything it started) is gone.
        let reading = output.fileHandleForReading
        defer { try? reading.close() }
        do throws(ExtractionStop) {
            try pump(reading.fileDescriptor, deadline: deadline, consume: consume)
        } catch {
            stop(process)
            _ = exited.wait(timeout: .now() + .seconds(Int(reapGrace.components.seconds)))
            throw error
        }
        // EOF: the child closed its stdout, which it does as it exits. Wait for it within
        // what is left of the deadline.
        guard exited.wait(timeout: dispatchTime(deadline)) == .success else {
            stop(process)
            _ = exited.wait(timeout: .now() + .seconds(Int(reapGrace.components.seconds)))
            throw .timeLimit
        }
        return process.terminationReason == .uncaughtSignal ? .signaled(process.terminationStatus)
            : .exited(process.terminationStatus)
    }

    /// Reads `descriptor` until EOF, polling so the deadline is kept while nothing comes.
    private static func pump(_ descriptor: Int32, deadline: ContinuousClock.Instant,
                             consume: (UnsafeBufferPointer<UInt8>) throws(ExtractionStop) -> Void) throws(ExtractionStop) {
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { throw .timeLimit }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // At most a second per wait: the deadline is checked again after each.
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 1000))
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .failed("reading the helper's output: poll failed (errno \(errno))")
            }
            if ready == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, chunkBytes) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .failed("reading the helper's output failed (errno \(errno))")
            }
            if count == 0 { return }
            let result = buffer.withUnsafeBufferPointer { all in
                Result { () throws(ExtractionStop) in try consume(UnsafeBufferPointer(rebasing: all[0..<count])) }
            }
            try result.get()
        }
    }

    /// SIGKILL to the child's process group (Foundation made it its leader) and the child,
    /// unless Foundation has seen it exit (its pid may then be another process's).
    private static func stop(_ process: Process) {
        let pid = process.processIdentifier
        guard pid > 0, process.isRunning else { return }
        _ = kill(-pid, SIGKILL)
        _ = kill(pid, SIGKILL)
    }

    private static func dispatchTime(_ deadline: ContinuousClock.Instant) -> DispatchTime {
        let left = ContinuousClock.now.duration(to: deadline)
        guard left > .zero else { return .now() }
        let nanoseconds = left.components.seconds * 1_000_000_000 + left.components.attoseconds / 1_000_000_000
        return .now() + .nanoseconds(Int(min(nanoseconds, Int64(Int32.max) * 1000)))
    }
}
