import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import SitefsTestSupport
import Synchronization
import Testing

@Suite("Mount lifecycle", .requiresFUSE)
struct MountLifecycleTests {
    @Test("mounting calls mounted(invalidator:); ending the session unmounts and calls unmounting()")
    func mountAndUnmount() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        #expect(filesystem.counters.mounted == 1)
        #expect(filesystem.hasInvalidator)
        #expect(mount.isMounted)
        #expect(mount.mount.status == .mounted)

        mount.tearDown()
        #expect(!mount.isMounted)
        #expect(mount.mount.status == .finished)
        #expect(filesystem.counters.unmounting == 1)
        #expect(mount.waitForRunToEnd().error == nil)
    }

    @Test("requestExit() ends run() promptly even while a file is held open in the mount")
    func exitWithOpenFile() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("held.txt", contents: Array("still open".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("held.txt")
        let descriptor = try mount.perform("open held.txt") { () throws -> Int32 in
            let descriptor = open(path, O_RDONLY)
            try Syscall.check(descriptor, "open")
            return descriptor
        }
        defer { close(descriptor) }

        let started = Date()
        mount.mount.requestExit()
        let end = mount.waitForRunToEnd(timeout: 10)
        #expect(end.ended, "run() still running 10 s after requestExit()")
        #expect(end.error == nil)
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(!mount.isMounted)

        // The connection is gone: the descriptor still open in it can no longer be served.
        let readResult = try mount.perform("read from the closed connection") { () -> Int32 in
            var byte: UInt8 = 0
            return read(descriptor, &byte, 1) < 0 ? errno : 0
        }
        #expect(readResult == ENOTCONN || readResult == ENODEV || readResult == EIO)
    }

    @Test("requestExit() before run() makes run() return without mounting")
    func exitBeforeRun() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-early-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mount = FUSEMount(operations: InMemoryFilesystem(), mountpoint: directory)
        mount.requestExit()
        try mount.run()
        #expect(mount.status == .finished)
        #expect(throws: FUSEMountError.alreadyStarted) { try mount.run() }
    }

    @Test("a missing mountpoint is a clear error")
    func missingMountpoint() {
        let path = "/tmp/sitefs-does-not-exist-\(UUID().uuidString)"
        let mount = FUSEMount(operations: InMemoryFilesystem(), mountpoint: path)
        #expect(throws: FUSEMountError.mountpointMissing(path)) { try mount.run() }
        #expect("\(FUSEMountError.mountpointMissing(path))".contains("does not exist"))
    }

    @Test("a mountpoint that is a file is a clear error")
    func fileMountpoint() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-file-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mount = FUSEMount(operations: InMemoryFilesystem(), mountpoint: path)
        #expect(throws: FUSEMountError.mountpointNotDirectory(path)) { try mount.run() }
    }

    @Test("mounting on a path that is already mounted is a clear error")
    func alreadyMounted() throws {
        let first = try TestMount.start()
        defer { first.tearDown() }
        let second = FUSEMount(operations: InMemoryFilesystem(), mountpoint: first.mountpoint)
        let mountpoint = first.mountpoint
        let outcome = try first.perform("second mount attempt") { () -> FUSEMountError? in
            do throws(FUSEMountError) {
                try second.run()
                return nil
            } catch {
                return error
            }
        }
        #expect(outcome == .alreadyMounted(mountpoint))
        #expect(outcome.map { "\($0)".contains("already mounted") } == true)
    }

    @Test("a read-only mount refuses writes with EROFS before they reach the core")
    func readOnly() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("fixed.txt", contents: Array("fixed".utf8))
        let mount = try TestMount.start(filesystem, options: MountOptions(fsName: "sitefs-test", readOnly: true))
        defer { mount.tearDown() }
        let path = mount.path("fixed.txt"), newPath = mount.path("new.txt")
        let errors = try mount.perform("writes on a read-only mount") { () -> [Int32] in
            let write = open(path, O_WRONLY)
            let writeError = write < 0 ? errno : 0
            if write >= 0 { close(write) }
            let create = open(newPath, O_WRONLY | O_CREAT, 0o644)
            let createError = create < 0 ? errno : 0
            if create >= 0 { close(create) }
            return [writeError, createError]
        }
        #expect(errors == [EROFS, EROFS])
        let cat = try mount.runProgram("/bin/cat", [path])
        #expect(cat.out == "fixed")
    }
}

@Suite("Signals", .requiresFUSE, .serialized)
struct SignalTests {
    @Test("with handleSignals, a SIGHUP taken by some other thread unmounts and run() returns")
    func hangupEndsSession() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem, options: MountOptions(fsName: "sitefs-test", handleSignals: true))
        defer { mount.tearDown() }

        // The signal goes to an idle bystander thread, not to the one in the FUSE loop (and
        // not to the process, so the other tests running now are not interrupted). libfuse's
        // handler is installed before the status turns .mounted, so it cannot kill the runner.
        let bystander = Mutex<pthread_t?>(nil)
        let release = DispatchSemaphore(value: 0)
        Thread {
            // Threads started from test threads inherit a mask that blocks SIGHUP.
            var hangup = sigset_t()
            sigemptyset(&hangup)
            sigaddset(&hangup, SIGHUP)
            pthread_sigmask(SIG_UNBLOCK, &hangup, nil)
            bystander.withLock { $0 = pthread_self() }
            _ = release.wait(timeout: .now() + 30)
        }.start()
        defer { release.signal() }
        _ = eventually(every: .milliseconds(1)) { bystander.withLock { $0 } != nil }
        let thread = try #require(bystander.withLock { $0 })
        #expect(pthread_kill(thread, SIGHUP) == 0)

        // Ended by SignalExitWatcher (within its 100 ms poll), since the loop thread never saw the signal.
        let end = mount.waitForRunToEnd(timeout: 10)
        #expect(end.ended, "run() still running 10 s after SIGHUP")
        #expect(end.error == nil)
        #expect(!mount.isMounted)
        #expect(filesystem.counters.unmounting == 1)
    }
}
