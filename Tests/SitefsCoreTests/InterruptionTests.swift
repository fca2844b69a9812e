import Dispatch
import Foundation
import SitefsCore
import SitefsProvider
import Synchronization
import SystemPackage
import SitefsTestSupport
import Testing

/// A program blocked in `open()` while its file downloads can be interrupted (issue 17,
/// item 1): the open ends with EINTR once the caller gives up, however long the server
/// takes, and another program waiting for the same download is not hurt by it.
///
/// Time is controlled by the backend's hold (`holdWholeFetches`): the download waits
/// until the test releases it or its caller gives up, so nothing here depends on timing.
@Suite struct InterruptionTests {
    /// A caller's "I give up", set by the test: what FUSE_INTERRUPT is to the adapter.
    final class Signal: Sendable {
        private let raised = Atomic<Bool>(false)
        func raise() { raised.store(true, ordering: .sequentiallyConsistent) }
        var context: RequestContext {
            RequestContext(uid: 1000, gid: 1000, pid: 1, isInterrupted: { self.raised.load(ordering: .sequentiallyConsistent) })
        }
    }

    /// An open for writing on a thread of its own, as a program blocked in open(2).
    final class BackgroundOpen: Sendable {
        private let outcome = Mutex<Result<HandleID, Errno>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ harness: CoreHarness, _ inode: InodeNumber, context: RequestContext) {
            Thread {
                let result = Result { () throws(Errno) in try harness.filesystem.open(inode, flags: O_RDWR, context: context).handle }
                self.outcome.withLock { $0 = result }
                self.done.signal()
            }.start()
        }

        /// Whether the open returned within `seconds`.
        func finished(within seconds: Double) -> Bool {
            guard done.wait(timeout: .now() + seconds) == .success else { return false }
            done.signal()  // later calls see it finished too
            return true
        }

        var wasInterrupted: Bool { outcome.withLock { if case .failure(.interrupted)? = $0 { true } else { false } } }
        func handle() throws -> HandleID { try #require(try outcome.withLock { $0 }?.get()) }
    }

    /// A site with `plan.odt` on the server, whose whole-file downloads wait until released.
    private func harnessWithHeldDownload() throws -> (CoreHarness, InodeNumber) {
        let harness = try CoreHarness()
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("plan.odt", in: site, kind: .file, content: Array("server bytes".utf8))
        let inode = try harness.lookup(try harness.lookup(.root, "Harbour").attributes.inode, "plan.odt").attributes.inode
        harness.backend.holdWholeFetches(true)
        return (harness, inode)
    }

    @Test func anInterruptedOpenEndsWithEINTRAndLeavesNothingBehind() throws {
        let (harness, inode) = try harnessWithHeldDownload()
        defer { harness.remove() }

        let signal = Signal()
        let open = BackgroundOpen(harness, inode, context: signal.context)
        _ = eventually { harness.backend.wholeFetchesHeld == 1 }
        try #require(harness.backend.wholeFetchesHeld == 1, "the download never started")
        signal.raise()
        #expect(open.finished(within: 10), "the open did not end after the interrupt")
        #expect(open.wasInterrupted)
        // No half-downloaded copy stays behind; the next open downloads afresh.
        #expect(harness.contentFiles.isEmpty)
        harness.backend.holdWholeFetches(false)
        #expect(try harness.readAll(inode, flags: O_RDWR) == Array("server bytes".utf8))
    }

    @Test func anotherOpenerWaitingForTheSameDownloadIsNotInterrupted() throws {
        let (harness, inode) = try harnessWithHeldDownload()
        defer { harness.remove() }

        let impatient = Signal()
        let first = BackgroundOpen(harness, inode, context: impatient.context)
        _ = eventually { harness.backend.wholeFetchesHeld == 1 }
        // The second opener finds the first one's download under way and waits for it.
        let second = BackgroundOpen(harness, inode, context: harness.context)
        #expect(!second.finished(within: 0.3), "the second open did not wait for the download")
        impatient.raise()
        #expect(first.finished(within: 10))
        #expect(first.wasInterrupted)
        // The second opener tries again and downloads itself; it waits for the server as before.
        _ = eventually { harness.backend.wholeFetchesHeld == 1 }
        #expect(harness.backend.wholeFetchesHeld == 1, "the waiting opener did not start its own download")
        harness.backend.holdWholeFetches(false)
        #expect(second.finished(within: 10))
        let handle = try second.handle()
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try harness.filesystem.read(inode, handle: handle, offset: 0, size: 64, into: $0) }
        #expect(Array(buffer[..<count]) == Array("server bytes".utf8))
        harness.filesystem.release(inode, handle: handle, flags: O_RDWR)
        #expect(harness.backend.calls("fetch") == 2)
    }
}
