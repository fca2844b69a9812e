import Foundation
import SitefsAPI
import SitefsCore
import SitefsProvider
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Synchronization
import Testing

/// Locks for editing as the core takes and shows them, over an in-memory server where a
/// test plays the other person (`lockOnServer`): LibreOffice's lock file beside a document
/// someone else holds, the lock taken when LibreOffice makes its own, saves that meet a lock.
@Suite struct EditingLockCoreTests {
    /// What the mount told its user.
    private final class NoticeLog: Sendable {
        let list = Mutex<[MountNotice]>([])
    }

    private struct World {
        let harness: CoreHarness
        let forms: ItemIdentifier
        let formsInode: InodeNumber
        let report: ItemIdentifier
        let notices = NoticeLog()

        var reportInode: InodeNumber { get throws { try harness.lookup(formsInode, "report.odt").attributes.inode } }
        func names() throws -> [String] { try harness.list(formsInode).compactMap(\.name.string).filter { $0 != "." && $0 != ".." }.sorted() }
    }

    /// A site "Harbour" with "Forms/report.odt" listed, and the change feed's cursor taken
    /// (the test polls it: `pollChangeFeedOnce`).
    private func world(writeBackDelay: Duration = .zero) throws -> World {
        let harness = try CoreHarness(writeBackDelay: writeBackDelay, changePollInterval: .seconds(3600))
        let site = harness.backend.addSite("Harbour")
        let forms = harness.backend.add("Forms", in: site, kind: .folder)
        let report = harness.backend.add("report.odt", in: forms, kind: .file, content: Array("the report".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let formsInode = try harness.lookup(siteInode, "Forms").attributes.inode
        let world = World(harness: harness, forms: forms, formsInode: formsInode, report: report)
        harness.filesystem.onNotice = { [notices = world.notices] notice in notices.list.withLock { $0.append(notice) } }
        harness.filesystem.pollChangeFeedOnce()
        return world
    }

    private func finish(_ world: World) {
        world.harness.filesystem.unmounting()
        world.harness.remove()
    }

    @Test func aDocumentLockedElsewhereShowsLibreOfficesLockFileNamingTheHolder() throws {
        let world = try world()
        defer { finish(world) }
        let since = Timestamp(secondsSinceEpoch: 1_795_000_000)
        world.harness.backend.lockOnServer(world.report, by: "Anna Berger", device: "site-laptop", since: since)

        #expect(try world.names() == [".~lock.report.odt#", "report.odt"])
        let lockFile = try world.harness.lookup(world.formsInode, ".~lock.report.odt#")
        #expect(lockFile.attributes.mode & 0o777 == 0o444, "someone else's lock file is read-only")
        let record = String(decoding: try world.harness.readAll(lockFile.attributes.inode), as: UTF8.self)
        let expected = String(decoding: OfficeLockFile.content(for: try #require(world.harness.backend.lockOf(world.report))),
                              as: UTF8.self)
        #expect(record == expected)
        #expect(record.hasPrefix("Anna Berger,anna berger,site-laptop,"), "LibreOffice shows the first field, then the host")
        #expect(record.hasSuffix(",sitefs:site-laptop;"))
        #expect(try world.harness.xattr(try world.reportInode, "user.sitefs.lock").hasPrefix("Anna Berger on site-laptop since "))

        // LibreOffice's own lock file cannot be made over it, nor can the holder's be removed.
        #expect(throws: Errno.fileExists) {
            _ = try world.harness.filesystem.create(parent: world.formsInode, name: FileName(".~lock.report.odt#"), mode: 0o644,
                                                    flags: O_WRONLY | O_CREAT | O_EXCL, context: world.harness.context)
        }
        #expect(throws: Errno.permissionDenied) { try world.harness.unlink(world.formsInode, ".~lock.report.odt#") }
        #expect(world.harness.backend.lockOf(world.report)?.heldHere == false, "their lock is untouched")
    }

    @Test func aLockTakenAfterTheListingRefusesLibreOfficesLockFileAndShowsTheHolders() throws {
        let world = try world()
        defer { finish(world) }
        #expect(try world.names() == ["report.odt"])
        world.harness.backend.lockOnServer(world.report, by: "Anna Berger")  // not polled yet: the listing predates it

        #expect(throws: Errno.fileExists) {
            _ = try world.harness.filesystem.create(parent: world.formsInode, name: FileName(".~lock.report.odt#"), mode: 0o644,
                                                    flags: O_WRONLY | O_CREAT | O_EXCL, context: world.harness.context)
        }
        let lockFile = try world.harness.lookup(world.formsInode, ".~lock.report.odt#")
        #expect(String(decoding: try world.harness.readAll(lockFile.attributes.inode), as: UTF8.self).hasPrefix("Anna Berger,"))
    }

    @Test func makingTheLockFileTakesTheLockAndRemovingItReleasesIt() throws {
        let world = try world()
        defer { finish(world) }
        try world.harness.createFile(world.formsInode, ".~lock.report.odt#", ",me,here,28.11.2026 10:00,file:///p;")
        let lock = try #require(world.harness.backend.lockOf(world.report))
        #expect(lock.heldHere)
        #expect(lock.application == "LibreOffice")
        #expect(world.harness.filesystem.mountStatus.locksHeld?.map(\.name) == ["report.odt"])
        #expect(try world.harness.xattr(try world.reportInode, "user.sitefs.lock").hasPrefix("this mount since "))
        #expect(try world.names() == [".~lock.report.odt#", "report.odt"], "one lock file: LibreOffice's own")

        try world.harness.unlink(world.formsInode, ".~lock.report.odt#")
        #expect(eventually { world.harness.backend.lockOf(world.report) == nil })
        #expect(eventually { world.harness.filesystem.mountStatus.locksHeld == [] })
        #expect(world.harness.backend.calls("createFile") == 0, "the lock file never went to the server")
    }

    @Test func aSaveOverADocumentLockedElsewhereIsKeptAsAConflictCopyNamingTheHolder() throws {
        let world = try world()
        defer { finish(world) }
        let inode = try world.reportInode
        world.harness.backend.lockOnServer(world.report, by: "Anna Berger")
        try world.harness.saveInPlace(inode, "my edit")
        #expect(world.harness.filesystem.waitForUploads(timeout: .seconds(20)))

        #expect(world.harness.backend.content(of: world.report) == Array("the report".utf8), "the holder's document is untouched")
        let copies = world.harness.backend.nodes(in: world.forms).filter { $0.name.contains("(conflict ") }
        try #require(copies.count == 1)
        #expect(world.harness.backend.content(of: copies[0].identifier) == Array("my edit".utf8))
        #expect(world.notices.list.withLock { $0 }.contains {
            if case .conflict("Harbour/Forms/report.odt", _, "Anna Berger") = $0 { true } else { false }
        })
    }

    @Test func theHolderClosingTellsWhoeverRanIntoTheLockThatTheDocumentIsFree() throws {
        let world = try world()
        defer { finish(world) }
        world.harness.backend.lockOnServer(world.report, by: "Anna Berger")
        // LibreOffice finds the lock file (the kernel refuses its O_EXCL create) and reads it.
        let lockFile = try world.harness.lookup(world.formsInode, ".~lock.report.odt#")
        _ = try world.harness.readAll(lockFile.attributes.inode)
        #expect(world.harness.filesystem.mountStatus.locksSeen?.map(\.path) == ["Harbour/Forms/report.odt"])

        world.harness.backend.unlockOnServer(world.report)
        world.harness.filesystem.pollChangeFeedOnce()
        #expect(world.notices.list.withLock { $0 }.contains(.documentFree(path: "Harbour/Forms/report.odt", formerHolder: "Anna Berger")))
        #expect(try world.names() == ["report.odt"])
        #expect(throws: Errno.noData) { _ = try world.harness.xattr(try world.reportInode, "user.sitefs.lock") }

        // Free now: LibreOffice here makes its lock file and holds the document.
        try world.harness.createFile(world.formsInode, ".~lock.report.odt#", ",me,here,28.11.2026 10:00,file:///p;")
        #expect(world.harness.backend.lockOf(world.report)?.heldHere == true)
    }

    @Test func aLockNoOneRanIntoEndsWithoutANotice() throws {
        let world = try world()
        defer { finish(world) }
        world.harness.backend.lockOnServer(world.report, by: "Anna Berger")
        #expect(try world.names().contains(".~lock.report.odt#"))
        world.harness.backend.unlockOnServer(world.report)
        world.harness.filesystem.pollChangeFeedOnce()
        #expect(try world.names() == ["report.odt"])
        #expect(!world.notices.list.withLock { $0 }.contains { if case .documentFree = $0 { true } else { false } })
    }

    @Test func withoutLocksOnTheServerOrOfflineTheLockFileIsMadeAsBefore() throws {
        let world = try world()
        defer { finish(world) }
        world.harness.backend.setLocking(false)
        try world.harness.createFile(world.formsInode, ".~lock.report.odt#", "x")
        #expect(world.harness.backend.calls("lock") <= 1, "asked once at most")
        try world.harness.unlink(world.formsInode, ".~lock.report.odt#")
        try world.harness.createFile(world.formsInode, ".~lock.report.odt#", "x")
        #expect(world.harness.backend.calls("lock") <= 1, "and not again")
        try world.harness.unlink(world.formsInode, ".~lock.report.odt#")

        world.harness.backend.setLocking(true)
        world.harness.backend.fail("lock", with: .unreachable("test: the network is down"))
        try world.harness.createFile(world.formsInode, ".~lock.report.odt#", "x")
        #expect(world.harness.backend.lockOf(world.report) == nil)
        #expect(try world.names() == [".~lock.report.odt#", "report.odt"])
    }

    @Test func aServerFileOpenForWritingIsLockedUntilItsLastWriterCloses() throws {
        let world = try world(writeBackDelay: .seconds(3600))
        defer { finish(world) }
        let inode = try world.reportInode
        let first = try world.harness.filesystem.open(inode, flags: O_RDWR, context: world.harness.context).handle
        let second = try world.harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: world.harness.context).handle
        #expect(eventually { world.harness.backend.lockOf(world.report)?.heldHere == true })
        world.harness.filesystem.release(inode, handle: first, flags: O_RDWR)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(world.harness.backend.lockOf(world.report) != nil, "one writer still has it open")
        try world.harness.write(inode, handle: second, Array("edited".utf8))
        try world.harness.filesystem.flush(inode, handle: second, context: world.harness.context)
        world.harness.filesystem.release(inode, handle: second, flags: O_WRONLY | O_TRUNC)
        // Released only once the save is on the server: it waits out its settle delay (an
        // hour here) with the lock kept, then goes with the lock's token.
        Thread.sleep(forTimeInterval: 1)
        #expect(world.harness.backend.lockOf(world.report)?.heldHere == true, "kept while the save waits")
        #expect(world.harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(world.harness.backend.content(of: world.report) == Array("edited".utf8))
        #expect(eventually { world.harness.backend.lockOf(world.report) == nil })
    }
}
