import Foundation
import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import Synchronization
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// Editors' save sequences become one new version of the original item; new files wait
/// out the settle delay; lock and swap files never reach the server; saves work offline.
@Suite struct SaveCoalescingTests {
    /// A harness with a site holding `doc.odt` ("old"), and the site's inode.
    private func harnessWithDocument(delay: Duration = .seconds(30), clock: MountClock = .system) throws
        -> (CoreHarness, ItemIdentifier, ItemIdentifier, InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: delay, clock: clock)
        let site = harness.backend.addSite("Harbour")
        let document = harness.backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (harness, site, document, siteInode)
    }

    @Test func aNewFileWaitsOutTheSettleDelayAndIsThenCreated() throws {
        // The delay is the test's to end: time moves only when it says.
        let (harness, site, _, siteInode) = try harnessWithDocument(delay: .seconds(2), clock: .manual())
        defer { harness.remove() }
        let inode = try harness.createFile(siteInode, "notes.txt", "hello")
        harness.clock.advance(by: .milliseconds(1_999))
        #expect(harness.backend.calls("createFile") == 0)
        #expect(try harness.xattr(inode, "user.sitefs.state") == "pending")
        // Listed and readable before the server has it.
        #expect(try harness.list(siteInode).map(\.name.description).contains("notes.txt"))
        #expect(try harness.readAll(inode) == Array("hello".utf8))
        #expect(!eventually(timeout: .milliseconds(100)) { harness.backend.calls("createFile") > 0 }, "created before the delay ended")
        // Then created without anyone asking.
        harness.clock.advance(by: .milliseconds(1))
        #expect(eventually { harness.backend.node(named: "notes.txt", in: site) != nil })
        let created = try #require(harness.backend.node(named: "notes.txt", in: site))
        #expect(harness.backend.content(of: created.identifier) == Array("hello".utf8))
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(5)))
        #expect(try harness.xattr(inode, "user.sitefs.id") == created.identifier.id)
        #expect(try harness.xattr(inode, "user.sitefs.state") == "online-only")
        #expect(harness.contentFiles.isEmpty)
    }

    @Test func aTempFileRenamedOverTheOriginalBecomesOneNewVersionOfIt() throws {
        // LibreOffice, gedit, sed -i: write lu123.tmp, rename it over doc.odt.
        let (harness, site, document, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        _ = try harness.lookup(siteInode, "doc.odt")
        let temp = try harness.createFile(siteInode, "lu123.tmp", "new content")
        try harness.rename(siteInode, "lu123.tmp", to: "doc.odt")
        #expect(try harness.lookup(siteInode, "doc.odt").attributes.inode == temp)
        #expect(try harness.xattr(temp, "user.sitefs.id") == document.id)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: document) == Array("new content".utf8))
        #expect(harness.backend.calls("modifyContent") == 1)
        #expect(harness.backend.calls("createFile") == 0 && harness.backend.calls("update") == 0 && harness.backend.calls("delete") == 0)
        #expect(harness.backend.node(named: "lu123.tmp", in: site) == nil)
    }

    @Test func vimsRenameWriteDeleteBecomesOneNewVersionOfTheOriginal() throws {
        let (harness, site, document, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        _ = try harness.lookup(siteInode, "doc.odt")
        try harness.rename(siteInode, "doc.odt", to: "doc.odt~")
        // The rename shows at once, the server does not have it yet.
        #expect(try harness.list(siteInode).map(\.name.description).filter { !$0.hasPrefix(".") }.sorted() == ["doc.odt~"])
        let written = try harness.createFile(siteInode, "doc.odt", "edited in vim")
        try harness.unlink(siteInode, "doc.odt~")
        #expect(try harness.list(siteInode).map(\.name.description).filter { !$0.hasPrefix(".") } == ["doc.odt"])
        #expect(try harness.xattr(written, "user.sitefs.id") == document.id)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: document) == Array("edited in vim".utf8))
        #expect(harness.backend.node(named: "doc.odt", in: site)?.identifier == document)
        #expect(harness.backend.calls("createFile") == 0 && harness.backend.calls("update") == 0 && harness.backend.calls("delete") == 0)
    }

    @Test func aBackupThatIsKeptIsRenamedOnTheServerBeforeTheNewFileIsCreated() throws {
        // vim with 'backup' set keeps doc.odt~: both must end up on the server.
        let (harness, site, document, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        try harness.rename(siteInode, "doc.odt", to: "doc.odt~")
        try harness.createFile(siteInode, "doc.odt", "new")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.node(named: "doc.odt~", in: site)?.identifier == document)
        let created = try #require(harness.backend.node(named: "doc.odt", in: site))
        #expect(created.identifier != document && harness.backend.content(of: created.identifier) == Array("new".utf8))
    }

    @Test func aFileCreatedAndDeletedWithinTheDelayNeverReachesTheServer() throws {
        let (harness, _, _, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        try harness.createFile(siteInode, "scratch.txt", "temporary")
        try harness.rename(siteInode, "scratch.txt", to: "scratch2.txt")
        try harness.unlink(siteInode, "scratch2.txt")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(5)))
        #expect(harness.backend.calls("createFile") == 0 && harness.backend.calls("delete") == 0)
        #expect(!(try harness.list(siteInode).map(\.name.description).contains("scratch2.txt")))
    }

    @Test func lockAndSwapFilesStayLocalButWorkOnTheMount() throws {
        let (harness, site, _, siteInode) = try harnessWithDocument(delay: .zero)
        defer { harness.remove() }
        for name in [".~lock.doc.odt#", ".doc.odt.swp", "4913"] {
            let inode = try harness.createFile(siteInode, name, "owner: anna")
            #expect(try harness.readAll(inode) == Array("owner: anna".utf8), "\(name)")
            #expect(try harness.xattr(inode, "user.sitefs.state") == "local")
        }
        // Settled means nothing is queued: a lock file journaled would have been sent by now.
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(5)))
        #expect(harness.backend.calls("createFile") == 0)
        #expect(harness.backend.node(named: ".~lock.doc.odt#", in: site) == nil)
        #expect(try harness.list(siteInode).map(\.name.description).contains(".~lock.doc.odt#"))
        try harness.unlink(siteInode, ".~lock.doc.odt#")
        #expect(throws: Errno.noSuchFileOrDirectory) { try harness.lookup(siteInode, ".~lock.doc.odt#") }
    }

    @Test func offlineNewFilesAndTempFileSavesAreJournaledAndSentWhenTheServerReturns() throws {
        let (harness, site, document, siteInode) = try harnessWithDocument(delay: .milliseconds(100))
        defer { harness.remove() }
        _ = try harness.list(siteInode)  // the folder is known
        harness.backend.fail(with: .unreachable("test: server down"))
        try harness.createFile(siteInode, "offline.txt", "written offline")
        try harness.createFile(siteInode, ".~doc.tmp", "saved offline")
        try harness.rename(siteInode, ".~doc.tmp", to: "doc.odt")
        #expect(!harness.filesystem.waitForUploads(timeout: .milliseconds(500)))
        #expect(harness.backend.content(of: document) == Array("old".utf8))
        harness.backend.fail(with: nil)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(60)))
        #expect(harness.backend.content(of: document) == Array("saved offline".utf8))
        let created = try #require(harness.backend.node(named: "offline.txt", in: site))
        #expect(harness.backend.content(of: created.identifier) == Array("written offline".utf8))
    }

    @Test func aNewFileSurvivesARestartBeforeItsUpload() throws {
        let (first, site, _, siteInode) = try harnessWithDocument()
        try first.createFile(siteInode, "draft.txt", "not sent yet")
        #expect(first.filesystem.uploadStatus.pending == 1)  // journaled, waiting out the delay
        first.filesystem.unmounting()  // writes out the metadata cache, as an unmount does
        first.backend.fail(with: .unreachable("test: server down"))  // the next mount starts offline
        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        let secondSite = try second.lookup(.root, "Harbour").attributes.inode
        let draft = try second.lookup(secondSite, "draft.txt").attributes.inode
        #expect(try second.readAll(draft) == Array("not sent yet".utf8))
        second.backend.fail(with: nil)
        #expect(second.filesystem.waitForUploads(timeout: .seconds(30)))
        let created = try #require(second.backend.node(named: "draft.txt", in: site))
        #expect(second.backend.content(of: created.identifier) == Array("not sent yet".utf8))
        #expect(try second.readAll(draft) == Array("not sent yet".utf8))
    }

    @Test func aNewFileDeletedAfterARestartIsGoneFromTheServerEvenIfItsCreateHadReachedIt() throws {
        let (first, site, _, siteInode) = try harnessWithDocument()
        try first.rename(siteInode, "doc.odt", to: "doc2.odt")  // queued: holds new files back after the restart
        try first.createFile(siteInode, "draft.txt", "sent before the kill")
        // The run dies after the server created the file, before the answer arrived.
        _ = first.backend.add("draft.txt", in: site, kind: .file, content: Array("sent before the kill".utf8))
        first.filesystem.unmounting()
        first.backend.holdRenames(true)
        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        let secondSite = try second.lookup(.root, "Harbour").attributes.inode
        #expect(try second.list(secondSite).filter { $0.name.description == "draft.txt" }.count == 1)

        // Deleted while its create still waits behind the rename: the delete must not just
        // drop the create, since the server may (and here does) have the file already.
        let result = Mutex<Result<Void, Errno>?>(nil)
        let unlinker = Thread {
            let outcome: Result<Void, Errno>
            do throws(Errno) { try second.unlink(secondSite, "draft.txt"); outcome = .success(()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
        }
        unlinker.start()
        #expect(eventually { second.filesystem.requestsWaitingForUploads == 1 })  // waiting for the create
        second.backend.holdRenames(false)
        _ = eventually(timeout: .seconds(20)) { result.withLock { $0 } != nil }
        let outcome = try #require(result.withLock { $0 })
        #expect(throws: Never.self) { try outcome.get() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(second.backend.node(named: "draft.txt", in: site) == nil)
        #expect(second.backend.node(named: "doc2.odt", in: site) != nil)
        #expect(!(try second.list(secondSite).map(\.name.description).contains("draft.txt")))
    }

    @Test func aSaveResumedAfterItsFilesDeleteReachedTheServerDoesNotBringTheFileBack() throws {
        let (first, site, _, siteInode) = try harnessWithDocument()
        let inode = try first.lookup(siteInode, "doc.odt").attributes.inode
        try first.saveInPlace(inode, "saved, then deleted")
        // The server deletes the file; the run dies before it learns so (and before the
        // pending save is dropped from the journal).
        first.backend.loseAnswerOfNextDelete()
        defer { first.backend.releaseLostAnswers() }
        Thread { try? first.unlink(siteInode, "doc.odt") }.start()
        _ = eventually { first.backend.node(named: "doc.odt", in: site) == nil }
        #expect(first.backend.node(named: "doc.odt", in: site) == nil)
        first.filesystem.unmounting()

        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        // The resumed save met the 404 of this mount's own delete: it goes, and the file is
        // not created again.
        #expect(second.backend.node(named: "doc.odt", in: site) == nil)
        #expect(second.backend.calls("createFile") == 0)
        #expect(second.filesystem.uploadStatus.failed.isEmpty)
        #expect(second.stagingIsEmpty)
    }

    @Test func aDeleteThatNeverReachedTheServerBeforeTheRunDiedIsSentAfterTheRestart() throws {
        let (first, site, _, siteInode) = try harnessWithDocument()
        let inode = try first.lookup(siteInode, "doc.odt").attributes.inode
        try first.saveInPlace(inode, "saved, then deleted")
        // `rm` returns once the delete is journaled; the run dies before the server has it.
        first.backend.holdDeletes(true)
        try first.unlink(siteInode, "doc.odt")
        _ = eventually { first.backend.calls("delete") > 0 }
        first.filesystem.unmounting()
        #expect(first.backend.node(named: "doc.odt", in: site) != nil)
        first.backend.holdDeletes(false)

        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        // What the user did last stands: the file is gone, and the save it made moot was
        // neither uploaded nor made again as a new file.
        #expect(second.backend.node(named: "doc.odt", in: site) == nil)
        #expect(second.backend.calls("createFile") == 0)
        #expect(second.backend.calls("modifyContent") == 0)
        #expect(second.filesystem.uploadStatus.failed.isEmpty)
        #expect(second.stagingIsEmpty)
    }

    @Test func aSaveWhoseAnswerARestartLostIsNotTakenForSomeoneElsesEdit() throws {
        let (first, site, document, siteInode) = try harnessWithDocument(delay: .zero)
        first.backend.loseAnswers(ofNextUploads: 1)
        defer { first.backend.releaseLostAnswers() }
        let inode = try first.lookup(siteInode, "doc.odt").attributes.inode
        try first.saveInPlace(inode, "first save")
        // The server commits it; the answer never comes (the daemon dies before it).
        _ = eventually { first.backend.content(of: document) == Array("first save".utf8) }
        #expect(first.backend.content(of: document) == Array("first save".utf8))
        try first.saveInPlace(inode, "second save")  // queued behind the one in flight, on the same base version
        first.filesystem.unmounting()

        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        // The server's newer version is our own first save: the second goes on top of it,
        // with no conflict copy.
        #expect(second.backend.content(of: document) == Array("second save".utf8))
        #expect(second.backend.calls("createFile") == 0)
        #expect(second.filesystem.uploadStatus.conflicts.isEmpty)
        #expect(second.backend.node(named: "doc.odt", in: site)?.identifier == document)
        // Both snapshots are gone once the server has the newer one.
        #expect(second.stagingIsEmpty)
    }

    @Test func afterARestartAFileWithASaveNotYetUploadedShowsThatSave() throws {
        let (first, _, document, siteInode) = try harnessWithDocument()
        let inode = try first.lookup(siteInode, "doc.odt").attributes.inode
        try first.saveInPlace(inode, "saved, not sent")
        first.filesystem.unmounting()
        first.backend.fail(with: .unreachable("test: server down"))  // the save stays pending
        let second = try CoreHarness(writeBackDelay: .seconds(30), reusing: first)
        defer { second.remove() }
        let secondSite = try second.lookup(.root, "Harbour").attributes.inode
        let entry = try second.lookup(secondSite, "doc.odt")
        // Not the server's "old": what the user saved, in size and content.
        #expect(entry.attributes.size == UInt64("saved, not sent".utf8.count))
        #expect(try second.readAll(entry.attributes.inode) == Array("saved, not sent".utf8))
        #expect(second.backend.content(of: document) == Array("old".utf8))
        second.backend.fail(with: nil)
        #expect(second.filesystem.waitForUploads(timeout: .seconds(30)))
        #expect(second.backend.content(of: document) == Array("saved, not sent".utf8))
    }

    @Test func aSaveStillRetryingWhenTheMountStopsIsResumedNotFailed() throws {
        var first: CoreHarness? = try CoreHarness(writeBackDelay: .zero)
        let backend = first!.backend, cacheDirectory = first!.cacheDirectory
        defer { try? FileManager.default.removeItem(at: cacheDirectory) }
        let site = backend.addSite("Harbour")
        let document = backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        let siteInode = try first!.lookup(.root, "Harbour").attributes.inode
        let inode = try first!.lookup(siteInode, "doc.odt").attributes.inode
        backend.fail(with: .unreachable("test: server down"))
        let handle = try first!.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: first!.context).handle
        try first!.write(inode, handle: handle, Array("saved while down".utf8))
        try first!.filesystem.flush(inode, handle: handle, context: first!.context)
        first!.filesystem.release(inode, handle: handle, flags: O_WRONLY)
        _ = eventually { backend.calls("modifyContent") > 0 }  // retrying now
        first!.filesystem.unmounting()
        first = nil  // the core goes: its workers stop (and are waited for) while the upload is retrying
        backend.fail(with: nil)
        let second = try CoreHarness(writeBackDelay: .seconds(30), backend: backend, cacheDirectory: cacheDirectory)
        #expect(second.filesystem.uploadStatus.failed.isEmpty)
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))  // no `sitefs retry` needed
        #expect(backend.content(of: document) == Array("saved while down".utf8))
    }

    @Test func itemsCarryTheirServerMetadataAsExtendedAttributes() throws {
        let (harness, _, document, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        let inode = try harness.lookup(siteInode, "doc.odt").attributes.inode
        #expect(try harness.xattr(inode, "user.sitefs.id") == document.id)
        #expect(try harness.xattr(inode, "user.sitefs.state") == "online-only")
        #expect(!(try harness.xattr(inode, "user.sitefs.version")).isEmpty)
        #expect(try harness.filesystem.listExtendedAttributes(inode, context: harness.context).contains("user.sitefs.modified_by"))
        #expect(throws: Errno.noData) { try harness.xattr(inode, "user.other") }
        // No labels or ACLs here: ENOTSUP, which tells `ls -l` to stop asking every file.
        for name in ["security.selinux", "system.posix_acl_access", "system.posix_acl_default", "trusted.x"] {
            #expect(throws: Errno.notSupported) { try harness.xattr(inode, name) }
            #expect(throws: Errno.notSupported) { try harness.xattr(.root, name) }
        }
        #expect(throws: Errno.noData) { try harness.xattr(.root, "user.other") }
        #expect(throws: Errno.notSupported) {
            try harness.filesystem.setExtendedAttribute(inode, name: "user.tag", value: [1], flags: 0, context: harness.context)
        }
    }

    @Test func theSettledStatusAnswersOnceUploadsAreDoneOrAfterAShortWait() throws {
        let (harness, _, document, siteInode) = try harnessWithDocument()
        defer { harness.remove() }
        func settled() throws -> (pending: Int, seconds: Double) {
            let started = Date()
            let json = try harness.xattr(.root, "user.sitefs.status.settled")
            let status = try JSONDecoder().decode(SitefsFilesystem.MountStatus.self, from: Data(json.utf8))
            return (status.uploads.pending, Date().timeIntervalSince(started))
        }
        // Nothing pending: the answer comes at once.
        #expect(try settled().pending == 0)
        harness.backend.holdUploadsHalfway(true)
        defer { harness.backend.holdUploadsHalfway(false) }
        try harness.saveInPlace(try harness.lookup(siteInode, "doc.odt").attributes.inode, "new")
        // An upload that cannot finish: the answer comes after the short wait (which also
        // sends what waited out the settle delay), still pending; never much later.
        let held = try settled()
        #expect(held.pending == 1 && held.seconds >= 0.2 && held.seconds < 5)
        harness.backend.holdUploadsHalfway(false)
        #expect(try eventually(timeout: .seconds(20), every: .zero) { try settled().pending == 0 })
        #expect(harness.backend.content(of: document) == Array("new".utf8))
        #expect(throws: Errno.permissionDenied) {
            try harness.filesystem.setExtendedAttribute(.root, name: "user.sitefs.status.settled", value: [1], flags: 0,
                                                        context: harness.context)
        }
    }

    @Test func statusShowsEachUploadsProgress() throws {
        let (harness, _, document, siteInode) = try harnessWithDocument(delay: .zero)
        defer { harness.remove() }
        harness.backend.holdUploadsHalfway(true)
        defer { harness.backend.holdUploadsHalfway(false) }
        let inode = try harness.lookup(siteInode, "doc.odt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: harness.context).handle
        try harness.write(inode, handle: handle, [UInt8](repeating: 7, count: 10_000))
        harness.filesystem.release(inode, handle: handle, flags: O_WRONLY)
        var progress: [SyncStatus.Progress] = []
        _ = eventually {
            progress = harness.filesystem.uploadStatus.progress
            return progress.first?.sent == 5_000
        }
        #expect(progress.count == 1)
        #expect(progress.first?.name == "doc.odt" && progress.first?.sent == 5_000 && progress.first?.total == 10_000)
        #expect(try harness.xattr(inode, "user.sitefs.state") == "uploading")
        harness.backend.holdUploadsHalfway(false)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: document)?.count == 10_000)
        #expect(harness.filesystem.uploadStatus.progress.isEmpty)
    }
}
