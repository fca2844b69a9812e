import Dispatch
import Foundation
@testable import SitefsCore
import SitefsProvider
import SitefsTestSupport
import Synchronization
import SystemPackage
import Testing

/// An open or a `stat` reads the item first, then looks for what stands for its content
/// here (a local copy, a save on its way). A save reported in between takes both away:
/// what was read before is then the version the save replaced. Held there by the core's
/// `itemReadPause` hook, each must use what the save's answer brought (under load on Apache,
/// git read its index back through a reader pinned to the replaced version and failed with
/// an I/O error, and a loose object it had just written as empty).
@Suite struct ReportedSinceTests {
    /// A site with `plan.txt` ("v1"), mounted, its inode looked up; saves wait a minute
    /// unless made due.
    private func harness() throws -> (CoreHarness, InodeNumber, InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: .seconds(60))
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (harness, siteInode, try harness.lookup(siteInode, "plan.txt").attributes.inode)
    }

    /// The save is sent and reported while the next open or getattr is between reading the
    /// item and looking at what stands for its content here.
    private func reportingAfterTheItemIsRead(_ harness: CoreHarness) {
        let filesystem = harness.filesystem
        let ran = Mutex(false)
        filesystem.itemReadPause.withLock {
            $0 = {
                guard !ran.withLock({ ran in defer { ran = true }; return ran }) else { return }
                #expect(filesystem.waitForUploads(timeout: .seconds(10)))
            }
        }
    }

    @Test func aReadOpenedAsASaveIsReportedReadsTheSavedVersion() throws {
        let (harness, _, plan) = try harness()
        defer { harness.remove() }
        try harness.saveInPlace(plan, "version two")
        #expect(harness.backend.calls("modifyContent") == 0, "the save waits out its delay")
        reportingAfterTheItemIsRead(harness)
        #expect(try harness.readAll(plan) == Array("version two".utf8))
        #expect(harness.backend.calls("modifyContent") == 1)
    }

    @Test func aNewFileStatedAsItsCreateIsReportedHasItsSize() throws {
        let (harness, siteInode, _) = try harness()
        defer { harness.remove() }
        let created = try harness.createFile(siteInode, "new.txt", "twelve bytes")
        #expect(harness.backend.calls("createFile") == 0, "the create waits out its delay")
        reportingAfterTheItemIsRead(harness)
        #expect(try harness.filesystem.attributes(of: created, handle: nil, context: harness.context).attributes.size == 12)
        #expect(harness.backend.calls("createFile") == 1)
        #expect(try harness.readAll(created) == Array("twelve bytes".utf8))
    }
}
