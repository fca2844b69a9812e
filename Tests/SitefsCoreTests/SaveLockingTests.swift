import Dispatch
import Foundation
@testable import SitefsCore
import SitefsProvider
import SitefsTestSupport
import Synchronization
import SystemPackage
import Testing

/// A save stages (copies or links, then fsyncs) and commits to the journal without holding
/// the lock `stat` needs (issue 18, item 2): a program that stats a file while another
/// saves it, as file managers and LibreOffice do, is answered at once. Writers still wait
/// for the save, so a snapshot never holds half a write. The save is held in the middle by
/// the core's `savePause` hook, so nothing here depends on how long an fsync takes.
@Suite struct SaveLockingTests {
    /// Something that runs on a thread of its own and says whether it has finished.
    final class Background: Sendable {
        private let done = DispatchSemaphore(value: 0)
        init(_ work: @escaping @Sendable () -> Void) {
            Thread { work(); self.done.signal() }.start()
        }
        func finished(within seconds: Double) -> Bool {
            guard done.wait(timeout: .now() + seconds) == .success else { return false }
            done.signal()
            return true
        }
    }

    /// Starts `close()`'s save of `handle` on a thread of its own and holds it after the
    /// copy is marked `saving`, until the returned semaphore is signalled.
    private func startHeldSave(_ harness: CoreHarness, _ inode: InodeNumber, _ handle: HandleID) throws
        -> (Background, DispatchSemaphore) {
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        harness.filesystem.savePause.withLock {
            $0 = { entered.signal(); _ = release.wait(timeout: .now() + 10) }
        }
        let save = Background { try? harness.filesystem.flush(inode, handle: handle, context: harness.context) }
        try #require(entered.wait(timeout: .now() + 10) == .success, "the save never started")
        harness.filesystem.savePause.withLock { $0 = nil }
        return (save, release)
    }

    @Test func statIsAnsweredWhileASaveStagesAndWritersWaitForIt() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let file = harness.backend.add("plan.odt", in: site, kind: .file, content: Array("v1".utf8))
        let inode = try harness.lookup(try harness.lookup(.root, "Harbour").attributes.inode, "plan.odt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_RDWR, context: harness.context).handle
        try harness.write(inode, handle: handle, Array("second version".utf8))

        let (save, release) = try startHeldSave(harness, inode, handle)

        let size = Mutex<UInt64?>(nil)
        let stat = Background {
            let attributes = try? harness.filesystem.attributes(of: inode, handle: nil, context: harness.context)
            size.withLock { $0 = attributes?.attributes.size }
        }
        #expect(stat.finished(within: 5), "stat waited for the save")
        #expect(size.withLock { $0 } == UInt64("second version".utf8.count))
        let write = Background { try? harness.write(inode, handle: handle, Array("third".utf8), at: 14) }
        #expect(!write.finished(within: 0.2), "a write went on while the save was staging")

        release.signal()
        #expect(save.finished(within: 10))
        #expect(write.finished(within: 10))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        harness.filesystem.release(inode, handle: handle, flags: O_RDWR)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: file) == Array("second versionthird".utf8))
    }

    /// A file deleted while its save stages is not uploaded afterwards: the save sees the
    /// delete's mark and cancels the job it queued (within the write-back delay, as a real
    /// mount has it; before this, the lock held across staging made the delete wait, and
    /// the queued save then brought the file back).
    @Test func aFileDeletedWhileItsSaveStagesIsNotUploaded() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("plan.odt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "plan.odt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_RDWR, context: harness.context).handle
        try harness.write(inode, handle: handle, Array("v2".utf8))

        let (save, release) = try startHeldSave(harness, inode, handle)
        try harness.unlink(siteInode, "plan.odt")
        release.signal()
        #expect(save.finished(within: 10))
        harness.filesystem.release(inode, handle: handle, flags: O_RDWR)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.calls("modifyContent") == 0)
        #expect(harness.backend.node(named: "plan.odt", in: site) == nil)
    }
}
