import Foundation
import SitefsCore
import SitefsProvider
import SitefsTestSupport
import SystemPackage
import Testing

/// "Free up space" (`user.sitefs.control.evict`, `sitefs evict`): local copies whose content
/// is on the server go, pins first; nothing the server lacks, and nothing open, ever goes.
@Suite struct EvictionCoreTests {
    /// A mounted harness with `Plans/a.txt`, `Plans/b.txt` and `notes.txt` on the server.
    private func harness(writeBackDelay: Duration = .zero) throws -> (CoreHarness, site: InodeNumber, plans: InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: writeBackDelay)
        let (site, plans) = try harness.mountPlansSite()
        return (harness, site, plans)
    }

    private func evict(_ harness: CoreHarness, _ inode: InodeNumber) throws -> EvictAnswer {
        try harness.control(inode, "user.sitefs.control.evict", as: EvictAnswer.self)
    }

    @Test func aPinnedFolderIsUnpinnedAndItsCopiesFreed() throws {
        let (harness, _, plans) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plans, "user.sitefs.control.pin", as: PinAnswer.self)
        #expect(harness.pinnedFilesLocal(2))
        #expect(harness.contentFiles.count == 2)

        let answer = try evict(harness, plans)
        #expect(answer.error == nil)
        #expect(answer.path == "Harbour/Plans")
        #expect(answer.unpinned == ["Harbour/Plans"])
        #expect(answer.freedFiles == 2 && answer.freedBytes > 0)
        #expect(answer.keptCount == 0)
        #expect(eventually { harness.contentFiles.isEmpty }, "the copies are gone from the cache")
        let a = try harness.lookup(plans, "a.txt").attributes.inode
        #expect(try harness.xattr(a, "user.sitefs.state") == "online-only")
        #expect(try harness.xattr(plans, "user.sitefs.state") == "online-only")
        #expect(eventually { harness.filesystem.mountStatus.pins?.pinned.isEmpty ?? true })
        #expect(try harness.readAll(a) == Array("plan a".utf8), "still readable, from the server")

        let again = try evict(harness, plans)
        #expect(again.freedFiles == 0 && again.unpinned.isEmpty && again.error == nil, "nothing left to free")
    }

    @Test func aSaveNotOnTheServerAndAnOpenFileAreKept() throws {
        let (harness, _, plans) = try harness(writeBackDelay: .seconds(3_600))
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plans, "user.sitefs.control.pin", as: PinAnswer.self)
        #expect(harness.pinnedFilesLocal(2))
        let a = try harness.lookup(plans, "a.txt").attributes.inode
        let b = try harness.lookup(plans, "b.txt").attributes.inode
        try harness.saveInPlace(a, "plan a, edited here")  // waits out the write-back delay
        let open = try harness.filesystem.open(b, flags: O_RDONLY, context: harness.context).handle
        let new = try harness.createFile(plans, "c.txt", "only here")

        let answer = try evict(harness, plans)
        #expect(answer.error == nil)
        #expect(answer.freedFiles == 0)
        #expect(answer.keptCount == 3)
        let reasons = Dictionary(uniqueKeysWithValues: answer.kept.map { ($0.path, $0.reason) })
        #expect(reasons["Harbour/Plans/a.txt"] == "a save is not on the server yet")
        #expect(reasons["Harbour/Plans/b.txt"] == "open in a program")
        #expect(reasons["Harbour/Plans/c.txt"] == "only on this device: not on the server yet")
        #expect(try harness.readAll(a) == Array("plan a, edited here".utf8), "the edit is still here")
        #expect(harness.backend.calls("modifyContent") == 0)

        // Unpinned by the request, they go on their own once sent and closed.
        harness.filesystem.release(b, handle: open, flags: O_RDONLY)
        _ = try harness.filesystem.getExtendedAttribute(.root, name: "user.sitefs.control.sync", context: harness.context)
        #expect(eventually { let status = harness.filesystem.mountStatus.uploads; return status.pending == 0 && status.uploading.isEmpty })
        #expect(harness.backend.calls("modifyContent") == 1)
        #expect(eventually { harness.contentFiles.isEmpty }, "\(harness.contentFiles)")
        let later = try evict(harness, plans)
        #expect(later.freedFiles == 0 && later.keptCount == 0, "\(later)")
        #expect(try harness.xattr(new, "user.sitefs.state") == "online-only")
    }

    @Test func anItemKeptByAPinnedFolderAboveIsRefused() throws {
        let (harness, site, plans) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(site, "user.sitefs.control.pin", as: PinAnswer.self)
        #expect(harness.pinnedFilesLocal(3))
        let answer = try evict(harness, plans)
        #expect(answer.error?.contains("kept on this device by the pinned folder Harbour") == true, "\(answer)")
        #expect(harness.contentFiles.count == 3, "nothing removed")
    }
}
