import Foundation
import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Synchronization
import Testing

/// Deleted there, saved here; refused there for good: the edit always ends where a person
/// can see it (the core over an in-memory server that refuses what a test says).
@Suite struct DeletedThereCoreTests {
    /// A site "Harbour" holding the folder "Forms" (listed, so the mount knows it).
    private func harness(writeBackDelay: Duration = .zero, rescueDirectory: String? = nil)
        throws -> (CoreHarness, site: ItemIdentifier, forms: ItemIdentifier, formsInode: InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: writeBackDelay, rescueDirectory: rescueDirectory)
        let site = harness.backend.addSite("Harbour")
        let forms = harness.backend.add("Forms", in: site, kind: .folder)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let formsInode = try harness.lookup(siteInode, "Forms").attributes.inode
        return (harness, site, forms, formsInode)
    }

    @Test func newFilesInAFolderDeletedThereGoIntoOneFolderMadeAgain() throws {
        let (harness, site, forms, formsInode) = try harness(writeBackDelay: .seconds(3600))
        defer { harness.remove() }
        let notices = Mutex<[MountNotice]>([])
        harness.filesystem.onNotice = { notice in notices.withLock { $0.append(notice) } }
        for name in ["a.txt", "b.txt", "c.txt"] { try harness.createFile(formsInode, name, "text of \(name)") }
        try harness.backend.delete(forms, baseVersion: nil)

        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)))
        let folders = harness.backend.nodes(in: site)
        try #require(folders.map(\.name) == ["Forms"], "one folder made again, joined by the other saves")
        #expect(folders[0].identifier != forms)
        #expect(harness.backend.nodes(in: folders[0].identifier).map(\.name) == ["a.txt", "b.txt", "c.txt"])
        let made = try #require(harness.backend.node(named: "b.txt", in: folders[0].identifier))
        #expect(harness.backend.content(of: made.identifier) == Array("text of b.txt".utf8))
        #expect(harness.filesystem.uploadStatus.failed.isEmpty)
        #expect(harness.filesystem.uploadStatus.remade.map(\.path) == ["Harbour/Forms"])
        #expect(notices.withLock { $0 }.contains { if case .foldersRemade("Harbour/Forms", _) = $0 { true } else { false } })
        #expect(harness.stagingIsEmpty)
    }

    @Test func whereTheFolderStoodIsJournaledWithTheSave() throws {
        var (first, site, forms, formsInode): (CoreHarness?, ItemIdentifier, ItemIdentifier, InodeNumber) = try harness(writeBackDelay: .seconds(3600))
        try first!.createFile(formsInode, "late.txt", "late")
        let previous = first!
        first = nil  // the daemon dies before the upload went
        try previous.backend.delete(forms, baseVersion: nil)

        // A new run knows nothing of "Forms" but what the journal says.
        let second = try CoreHarness(reusing: previous)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(20)))
        let folder = try #require(second.backend.node(named: "Forms", in: site))
        let file = try #require(second.backend.node(named: "late.txt", in: folder.identifier))
        #expect(second.backend.content(of: file.identifier) == Array("late".utf8))
    }

    @Test func aSaveTheServerRefusesIsRescuedBesideItsFile() throws {
        let (harness, _, forms, formsInode) = try harness()
        defer { harness.remove() }
        let form = harness.backend.add("form.txt", in: forms, kind: .file, content: Array("v1".utf8))
        let inode = try harness.lookup(formsInode, "form.txt").attributes.inode
        harness.backend.fail("modifyContent", with: .forbidden("this folder is read-only for you"))
        try harness.saveInPlace(inode, "filled in")

        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(harness.backend.content(of: form) == Array("v1".utf8), "the refused save did not land on the file")
        let rescued = try #require(harness.backend.nodes(in: forms).first { $0.name.hasPrefix("form (rescued ") })
        #expect(rescued.name.hasSuffix(" sitefs).txt"))
        #expect(harness.backend.content(of: rescued.identifier) == Array("filled in".utf8))
        let status = harness.filesystem.uploadStatus
        #expect(status.failed.isEmpty)
        try #require(status.rescued.count == 1)
        #expect(status.rescued[0].name == "form.txt")
        #expect(status.rescued[0].savedAs == "Harbour/Forms/" + rescued.name)
        #expect(status.rescued[0].reason.contains("read-only for you"))
        #expect(harness.stagingIsEmpty)
    }

    @Test func aSaveNoFolderOnTheServerTakesIsKeptOnThisComputer() throws {
        let rescue = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-rescue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: rescue) }
        let (harness, _, forms, formsInode) = try harness(rescueDirectory: rescue.path)
        defer { harness.remove() }
        harness.backend.add("form.txt", in: forms, kind: .file, content: Array("v1".utf8))
        let inode = try harness.lookup(formsInode, "form.txt").attributes.inode
        harness.backend.fail("modifyContent", with: .forbidden("read-only"))
        harness.backend.fail("createFile", with: .forbidden("read-only"))
        try harness.saveInPlace(inode, "filled in")

        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)))
        let kept = try FileManager.default.contentsOfDirectory(atPath: rescue.path)
        try #require(kept.count == 1 && kept[0].hasPrefix("form (rescued "), "\(kept)")
        let path = rescue.appendingPathComponent(kept[0]).path
        #expect(FileManager.default.contents(atPath: path) == Data("filled in".utf8))
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: rescue.path)[.posixPermissions] as? Int) == 0o700)
        let failed = try #require(harness.filesystem.uploadStatus.failed.first)
        #expect(failed.reason.contains("your edit is kept on this computer as \(path)"), "\(failed.reason)")
        // Still in the journal too: `sitefs retry` once the server takes it again.
        harness.backend.fail("modifyContent", with: nil)
        try harness.filesystem.setExtendedAttribute(.root, name: "user.sitefs.retry", value: Array("1".utf8), flags: 0,
                                                    context: harness.context)  // `sitefs retry`
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(harness.filesystem.uploadStatus.failed.isEmpty)
    }
}
