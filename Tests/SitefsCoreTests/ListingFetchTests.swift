import Foundation
import SitefsCore
import SitefsProvider
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A folder listing fetched while the folder changes here must not be stored without the
/// change. The soak caught one: a new file's create finished while its folder was being
/// listed, the listing was stored without the file, and the next save under its name made a
/// second file whose upload then met the name taken and became a conflict copy.
@Suite struct ListingFetchTests {
    /// A server folder "Plans" holding `files`, looked up through a fresh core whose cached
    /// metadata goes stale after `maxAge`.
    private func harnessWithFolder(_ files: [String], maxAge: Duration) throws -> (CoreHarness, plans: InodeNumber) {
        let harness = try CoreHarness(metadataMaxAge: maxAge, clock: .manual())
        let site = harness.backend.addSite("Harbour")
        let plans = harness.backend.add("Plans", in: site, kind: .folder)
        for name in files { harness.backend.add(name, in: plans, kind: .file, content: Array(name.utf8)) }
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (harness, try harness.lookup(siteInode, "Plans").attributes.inode)
    }

    @Test func aCreateFinishingWhileItsFolderIsListedStaysVisible() throws {
        let (harness, plans) = try harnessWithFolder(["a.txt"], maxAge: .milliseconds(300))
        defer { harness.remove() }
        try harness.createFile(plans, "new.txt", "new content")  // waits out the write-back delay
        harness.clock.advance(by: .milliseconds(400))  // the folder's listing is stale: the next lookup lists it again
        let filesystem = harness.filesystem
        // The server's page is taken before the create reaches it; the create and its report
        // happen before the page is answered.
        harness.backend.duringNextListing { _ = filesystem.waitForUploads(timeout: .seconds(10)) }
        _ = try harness.lookup(plans, "a.txt")
        #expect(harness.backend.calls("createFile") == 1, "the upload did not run during the listing")
        let created = try harness.lookup(plans, "new.txt")
        #expect(try harness.readAll(created.attributes.inode) == Array("new content".utf8))
        // And the listing the lookup stored is the one later lookups and `ls` use.
        #expect(try harness.listNames(plans) == ["a.txt", "new.txt"])
    }

    @Test func aSaveConfirmedWhileItsFolderIsListedKeepsItsNewSize() throws {
        let (harness, plans) = try harnessWithFolder(["a.txt", "b.txt"], maxAge: .milliseconds(300))
        defer { harness.remove() }
        let file = try harness.lookup(plans, "a.txt").attributes.inode
        try harness.saveInPlace(file, "a longer content")  // waits out the write-back delay
        harness.clock.advance(by: .milliseconds(400))
        let filesystem = harness.filesystem
        harness.backend.duringNextListing { _ = filesystem.waitForUploads(timeout: .seconds(10)) }
        _ = try harness.lookup(plans, "b.txt")  // its page still has a.txt's old size
        #expect(harness.backend.calls("modifyContent") == 1, "the upload did not run during the listing")
        let size = try harness.filesystem.attributes(of: file, handle: nil, context: harness.context).attributes.size
        #expect(size == UInt64("a longer content".utf8.count))
    }

    @Test func aFileDeletedHereWhileItsFolderIsListedDoesNotComeBack() throws {
        let (harness, plans) = try harnessWithFolder(["a.txt", "b.txt"], maxAge: .milliseconds(300))
        defer { harness.remove() }
        harness.clock.advance(by: .milliseconds(400))
        let filesystem = harness.filesystem, context = harness.context
        // `rm a.txt` from another process while this lookup's page (with a.txt) is on its way.
        harness.backend.duringNextListing {
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = try? filesystem.unlink(parent: plans, name: FileName("a.txt"), context: context)
                done.signal()
            }.start()
            _ = done.wait(timeout: .now() + 10)
        }
        _ = try harness.lookup(plans, "b.txt")
        #expect(try harness.listNames(plans) == ["b.txt"])
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.calls("delete") == 1)
        #expect(throws: Errno.noSuchFileOrDirectory) { try harness.lookup(plans, "a.txt") }
    }
}

extension CoreHarness {
    /// The names `ls` would show (without `.` and `..`).
    func listNames(_ inode: InodeNumber) throws -> [String] {
        try list(inode).compactMap(\.name.string).filter { $0 != "." && $0 != ".." }
    }
}
