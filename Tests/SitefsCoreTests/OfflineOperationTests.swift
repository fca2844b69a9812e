import Foundation
import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Testing

/// The folder tree changed while the server is unreachable: shown at once, journaled,
/// replayed in order when it is back, and what someone changed on the server meanwhile is
/// never removed or overwritten.
@Suite struct OfflineOperationTests {
    /// A harness with a site holding `doc.txt`, made offline (two failed requests).
    private func offlineHarness() throws -> (CoreHarness, ItemIdentifier, InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: .zero)
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("doc.txt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        _ = try harness.list(siteInode)
        goOffline(harness)
        return (harness, site, siteInode)
    }

    private func goOffline(_ harness: CoreHarness) {
        harness.backend.fail(with: .unreachable("test: the network is down"))
        harness.filesystem.pollChangeFeedOnce()
        harness.filesystem.pollChangeFeedOnce()
    }

    /// The server answers again; everything queued reaches it.
    private func comeBack(_ harness: CoreHarness) {
        harness.backend.fail(with: nil)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)), "replay did not finish")
    }

    private func mkdir(_ harness: CoreHarness, _ parent: InodeNumber, _ name: String) throws -> InodeNumber {
        try harness.filesystem.makeDirectory(parent: parent, name: FileName(name), mode: 0o755, context: harness.context).attributes.inode
    }

    private func names(_ harness: CoreHarness, _ inode: InodeNumber) throws -> [String] {
        try harness.list(inode).map(\.name.description).filter { $0 != "." && $0 != ".." }.sorted()
    }

    @Test func aFolderMadeAndFilledOfflineArrivesWhole() throws {
        let (harness, site, siteInode) = try offlineHarness()
        defer { harness.remove() }
        let reports = try mkdir(harness, siteInode, "Reports")
        let week = try mkdir(harness, reports, "Week 1")
        try harness.createFile(week, "monday.txt", "poured slab")
        try harness.createFile(reports, "index.txt", "see week 1")
        // Renamed before it ever reached the server: made there under the new name.
        try harness.rename(siteInode, "Reports", to: "Site reports")
        #expect(try names(harness, siteInode) == ["Site reports", "doc.txt"])
        #expect(try names(harness, reports) == ["Week 1", "index.txt"])
        #expect(try harness.xattr(reports, "user.sitefs.state") == "pending")
        #expect(harness.backend.calls("createFolder") == 0)

        comeBack(harness)
        let folder = try #require(harness.backend.node(named: "Site reports", in: site))
        let inner = try #require(harness.backend.node(named: "Week 1", in: folder.identifier))
        let monday = try #require(harness.backend.node(named: "monday.txt", in: inner.identifier))
        let index = try #require(harness.backend.node(named: "index.txt", in: folder.identifier))
        #expect(harness.backend.content(of: monday.identifier) == Array("poured slab".utf8))
        #expect(harness.backend.content(of: index.identifier) == Array("see week 1".utf8))
        #expect(harness.backend.node(named: "Reports", in: site) == nil)
        // The inodes now stand for the server's folders, with the same content.
        #expect(try harness.xattr(reports, "user.sitefs.id") == folder.identifier.id)
        #expect(try names(harness, week) == ["monday.txt"])
    }

    @Test func deletesAndRenamesAreReplayedInTheOrderMade() throws {
        let harness = try CoreHarness(writeBackDelay: .zero)
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let original = harness.backend.add("doc.txt", in: site, kind: .file, content: Array("old".utf8))
        let draft = harness.backend.add("draft.txt", in: site, kind: .file, content: Array("new".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        _ = try harness.list(siteInode)
        goOffline(harness)
        // `rm doc.txt; mv draft.txt doc.txt; mkdir Archive`: the name is free on the server
        // only once the delete is done, so the rename must not overtake it.
        try harness.unlink(siteInode, "doc.txt")
        try harness.rename(siteInode, "draft.txt", to: "doc.txt")
        _ = try mkdir(harness, siteInode, "Archive")
        #expect(try names(harness, siteInode) == ["Archive", "doc.txt"])
        comeBack(harness)
        #expect(harness.backend.content(of: original) == nil, "deleted on the server")
        #expect(harness.backend.node(named: "doc.txt", in: site)?.identifier == draft, "renamed after the delete, not beside it")
        #expect(harness.backend.node(named: "Archive", in: site)?.kind == .folder)
        #expect(try harness.backend.children(of: site, after: nil, limit: 10).items.count == 2)
    }

    @Test func aFileChangedOnTheServerMeanwhileIsNotDeleted() throws {
        let (harness, site, siteInode) = try offlineHarness()
        defer { harness.remove() }
        let document = try #require(harness.backend.node(named: "doc.txt", in: site))
        try harness.unlink(siteInode, "doc.txt")
        #expect(throws: Errno.noSuchFileOrDirectory) { try harness.lookup(siteInode, "doc.txt") }
        harness.backend.editOnServer(document.identifier, content: Array("someone's edit".utf8))
        comeBack(harness)
        #expect(harness.backend.content(of: document.identifier) == Array("someone's edit".utf8), "kept on the server")
        #expect(harness.filesystem.uploadStatus.notApplied.map(\.name) == ["doc.txt"])
        // And shown again on the mount.
        #expect(eventually { (try? self.names(harness, siteInode)) == ["doc.txt"] })
    }

    /// The server's newer version is this mount's own save, whose upload was already on its
    /// way when the file was deleted offline: no one else's edit, so the delete goes.
    @Test func aFileWhoseOwnSaveLandedAfterItsOfflineDeleteIsDeleted() throws {
        let harness = try CoreHarness(writeBackDelay: .zero)
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let document = harness.backend.add("doc.txt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "doc.txt").attributes.inode
        harness.backend.holdUploadsHalfway(true)
        try harness.saveInPlace(inode, "my v2")
        // Counted once the request is past the server's door (before the hold): from then on
        // going offline cannot stop it.
        try #require(eventually { harness.backend.calls("modifyContent") == 1 })
        goOffline(harness)  // the upload is held halfway
        try harness.unlink(siteInode, "doc.txt")
        harness.backend.holdUploadsHalfway(false)  // it lands: the server has "my v2"
        try #require(eventually { harness.backend.content(of: document) == Array("my v2".utf8) })
        comeBack(harness)
        #expect(harness.backend.content(of: document) == nil, "deleted on the server")
        #expect(harness.filesystem.uploadStatus.notApplied.isEmpty)
        #expect(try names(harness, siteInode).isEmpty)
    }

    @Test func aFolderFilledOnTheServerMeanwhileIsNotRemoved() throws {
        let harness = try CoreHarness(writeBackDelay: .zero)
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let old = harness.backend.add("Old", in: site, kind: .folder)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let oldInode = try harness.lookup(siteInode, "Old").attributes.inode
        #expect(try names(harness, oldInode) == [])
        goOffline(harness)
        try harness.filesystem.removeDirectory(parent: siteInode, name: FileName("Old"), context: harness.context)
        #expect(try names(harness, siteInode) == [])
        harness.backend.add("added there.txt", in: old, kind: .file, content: Array("mine".utf8))
        comeBack(harness)
        #expect(harness.backend.node(named: "added there.txt", in: old) != nil)
        #expect(harness.backend.node(named: "Old", in: site) != nil)
        #expect(harness.filesystem.uploadStatus.notApplied.first?.reason.contains("added") == true)
    }

    @Test func aFolderMadeOfflineJoinsOneOfTheSameNameMadeOnTheServerMeanwhile() throws {
        let (harness, site, siteInode) = try offlineHarness()
        defer { harness.remove() }
        let photos = try mkdir(harness, siteInode, "Photos")
        try harness.createFile(photos, "mine.jpg", "here")
        let theirs = harness.backend.add("Photos", in: site, kind: .folder)
        harness.backend.add("theirs.jpg", in: theirs, kind: .file, content: Array("there".utf8))
        comeBack(harness)
        let folders = try harness.backend.children(of: site, after: nil, limit: 100).items.filter { $0.kind == .folder }
        #expect(folders.map(\.name) == ["Photos"], "one folder, not two")
        #expect(harness.backend.node(named: "mine.jpg", in: theirs).map { harness.backend.content(of: $0.identifier) } == Array("here".utf8))
        #expect(harness.backend.node(named: "theirs.jpg", in: theirs) != nil)
    }

    @Test func anOfflineSessionSurvivesARestartAndIsReplayedAfterIt() throws {
        let backend: InMemoryBackend, directory: URL, site: ItemIdentifier
        do {
            let (first, siteIdentifier, siteInode) = try offlineHarness()
            let plans = try mkdir(first, siteInode, "Plans")
            try first.createFile(plans, "level 1.txt", "walls")
            try first.unlink(siteInode, "doc.txt")
            (backend, directory, site) = (first.backend, first.cacheDirectory, siteIdentifier)
            // The daemon dies once its metadata cache is on disk (written in the background as
            // it runs): its workers stop, nothing queued is sent or waited for.
            first.filesystem.unmounting()
        }
        // A new one starts on the same cache, still offline.
        let second = try CoreHarness(writeBackDelay: .zero, backend: backend, cacheDirectory: directory)
        defer { second.remove() }
        goOffline(second)
        let siteAgain = try second.lookup(.root, "Harbour").attributes.inode
        #expect(try names(second, siteAgain) == ["Plans"])
        let plansAgain = try second.lookup(siteAgain, "Plans").attributes.inode
        #expect(try names(second, plansAgain) == ["level 1.txt"])
        #expect(try second.readAll(second.lookup(plansAgain, "level 1.txt").attributes.inode) == Array("walls".utf8))
        #expect(backend.node(named: "Plans", in: site) == nil)
        comeBack(second)
        let folder = try #require(backend.node(named: "Plans", in: site))
        let level = try #require(backend.node(named: "level 1.txt", in: folder.identifier))
        #expect(backend.content(of: level.identifier) == Array("walls".utf8))
        #expect(backend.node(named: "doc.txt", in: site) == nil)
        #expect(try backend.children(of: site, after: nil, limit: 10).items.map(\.name) == ["Plans"])
    }

    // MARK: Replay meets what changed on the server meanwhile, one test per case

    /// A mounted harness whose `doc.txt` is pinned (local), then offline.
    private func offlineWithLocalDocument() throws -> (CoreHarness, ItemIdentifier, InodeNumber, InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: .zero)
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("doc.txt", in: site, kind: .file, content: Array("v1".utf8))
        harness.mount()
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let doc = try harness.lookup(siteInode, "doc.txt").attributes.inode
        _ = try harness.filesystem.getExtendedAttribute(doc, name: "user.sitefs.control.pin", context: harness.context)
        #expect(eventually { (try? harness.xattr(doc, "user.sitefs.state")) == "downloaded" })
        goOffline(harness)
        return (harness, site, siteInode, doc)
    }

    @Test func editedThereAndHereBothAreKept() throws {
        let (harness, site, _, doc) = try offlineWithLocalDocument()
        defer { harness.remove(); harness.filesystem.unmounting() }
        try harness.saveInPlace(doc, "edited here")
        let original = try #require(harness.backend.node(named: "doc.txt", in: site))
        harness.backend.editOnServer(original.identifier, content: Array("edited there".utf8))
        comeBack(harness)
        #expect(harness.backend.content(of: original.identifier) == Array("edited there".utf8), "theirs keeps the name")
        let copies = try harness.backend.children(of: site, after: nil, limit: 10).items.filter { $0.name.contains("(conflict ") }
        #expect(copies.count == 1)
        #expect(copies.first.map { harness.backend.content(of: $0.identifier) } == Array("edited here".utf8))
    }

    @Test func deletedThereEditedHereIsCreatedAgain() throws {
        let (harness, site, _, doc) = try offlineWithLocalDocument()
        defer { harness.remove(); harness.filesystem.unmounting() }
        try harness.saveInPlace(doc, "edited here")
        let original = try #require(harness.backend.node(named: "doc.txt", in: site))
        harness.backend.fail(with: nil)
        try harness.backend.delete(original.identifier, baseVersion: nil)
        harness.backend.fail(with: .unreachable("test: down again"))
        comeBack(harness)
        let again = try #require(harness.backend.node(named: "doc.txt", in: site))
        #expect(harness.backend.content(of: again.identifier) == Array("edited here".utf8))
    }

    @Test func filesAddedHereGoIntoAFolderRenamedThere() throws {
        let harness = try CoreHarness(writeBackDelay: .zero)
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let plans = harness.backend.add("Plans", in: site, kind: .folder)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let plansInode = try harness.lookup(siteInode, "Plans").attributes.inode
        _ = try harness.list(plansInode)
        goOffline(harness)
        try harness.createFile(plansInode, "level 2.txt", "stairs")
        let sub = try mkdir(harness, plansInode, "Details")
        try harness.createFile(sub, "joint.txt", "bolted")
        harness.backend.renameOnServer(plans, to: "Plans 2024")
        comeBack(harness)
        #expect(harness.backend.node(named: "Plans 2024", in: site)?.identifier == plans)
        #expect(harness.backend.node(named: "level 2.txt", in: plans).map { harness.backend.content(of: $0.identifier) } == Array("stairs".utf8))
        let details = try #require(harness.backend.node(named: "Details", in: plans))
        #expect(harness.backend.node(named: "joint.txt", in: details.identifier) != nil)
    }

    @Test func aNameTakenThereGivesTheNewFileAConflictName() throws {
        let (harness, site, siteInode) = try offlineHarness()
        defer { harness.remove() }
        try harness.createFile(siteInode, "report.txt", "mine")
        harness.backend.add("report.txt", in: site, kind: .file, content: Array("theirs".utf8))
        comeBack(harness)
        let files = try harness.backend.children(of: site, after: nil, limit: 10).items.filter { $0.name.hasPrefix("report") }
        #expect(files.count == 2)
        #expect(harness.backend.node(named: "report.txt", in: site).map { harness.backend.content(of: $0.identifier) } == Array("theirs".utf8))
        #expect(files.contains { $0.name.contains("(conflict ") && harness.backend.content(of: $0.identifier) == Array("mine".utf8) })
    }
}
