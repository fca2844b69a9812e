import Dispatch
import Foundation
@testable import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Synchronization
import Testing

/// Pinned items are kept on this device: downloaded in the background, kept current, never
/// cleaned up on release, restored at mount, served while the server is unreachable.
@Suite struct PinCoreTests {
    /// A mounted harness with a site holding `Plans/a.txt`, `Plans/b.txt` and `notes.txt`.
    private func harness(cacheSizeLimit: Int64? = nil, reusing directory: URL? = nil, backend: InMemoryBackend? = nil) throws
        -> (CoreHarness, InodeNumber, InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: .zero, backend: backend, cacheDirectory: directory,
                                      cacheSizeLimit: cacheSizeLimit)
        guard backend == nil else {  // the server already has them (a remount)
            harness.mount()
            let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
            return (harness, siteInode, try harness.lookup(siteInode, "Plans").attributes.inode)
        }
        let (siteInode, plansInode) = try harness.mountPlansSite()
        return (harness, siteInode, plansInode)
    }

    private func goOffline(_ harness: CoreHarness) {
        harness.backend.fail(with: .unreachable("test: the network is down"))
        harness.filesystem.pollChangeFeedOnce()
        harness.filesystem.pollChangeFeedOnce()
    }

    @Test func aPinnedFolderIsDownloadedKeptAfterUseAndReadOffline() throws {
        let (harness, siteInode, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        let answer = try harness.control(plansInode, "user.sitefs.control.pin")
        #expect(answer.pinned && answer.path == "Harbour/Plans" && answer.error == nil)
        #expect(harness.pinnedFilesLocal(2))
        #expect(harness.contentFiles.count == 2, "one local copy per pinned file")
        let a = try harness.lookup(plansInode, "a.txt").attributes.inode
        #expect(try harness.xattr(a, "user.sitefs.state") == "downloaded")
        #expect(try harness.xattr(a, "user.sitefs.pinned") == "folder")
        #expect(try harness.xattr(plansInode, "user.sitefs.pinned") == "1")
        #expect(try harness.xattr(plansInode, "user.sitefs.state") == "downloaded")
        let notes = try harness.lookup(siteInode, "notes.txt").attributes.inode
        #expect(try harness.xattr(notes, "user.sitefs.state") == "online-only")
        #expect(try harness.readAll(a) == Array("plan a".utf8))
        #expect(harness.contentFiles.count == 2, "still there once closed")

        goOffline(harness)
        #expect(harness.filesystem.mountStatus.offlineSince != nil)
        #expect(try harness.readAll(a) == Array("plan a".utf8))
        let b = try harness.lookup(plansInode, "b.txt").attributes.inode
        #expect(try harness.readAll(b) == Array("plan b".utf8))
        let fetches = harness.backend.calls("fetchContent")
        #expect(throws: Errno.networkUnreachable) { _ = try harness.readAll(notes) }
        #expect(harness.backend.calls("fetchContent") == fetches, "offline: failed at once, not sent")
    }

    @Test func changesOnTheServerReachAPinnedFolderWithoutAnOpen() throws {
        let (harness, _, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plansInode, "user.sitefs.control.pin")
        #expect(harness.pinnedFilesLocal(2))
        let site = try #require(try harness.backend.sites(after: nil, limit: 10).items.first?.identifier)
        let plans = try #require(harness.backend.node(named: "Plans", in: site))
        let a = try #require(harness.backend.node(named: "a.txt", in: plans.identifier))
        harness.backend.editOnServer(a.identifier, content: Array("plan a, revised".utf8))
        harness.backend.add("c.txt", in: plans.identifier, kind: .file, content: Array("plan c".utf8))
        harness.filesystem.pollChangeFeedOnce()  // what the poller does every few seconds
        #expect(harness.pinnedFilesLocal(3))
        goOffline(harness)
        #expect(try harness.readAll(harness.lookup(plansInode, "a.txt").attributes.inode) == Array("plan a, revised".utf8))
        #expect(try harness.readAll(harness.lookup(plansInode, "c.txt").attributes.inode) == Array("plan c".utf8))
    }

    /// `sitefs sync --pinned` waits for "every pinned file local": once the pinned folder's
    /// files are deleted, that is none of none, not the last count of two.
    @Test func aPinnedFolderEmptiedIsCountedAsAllLocal() throws {
        let (harness, _, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plansInode, "user.sitefs.control.pin")
        #expect(harness.pinnedFilesLocal(2))
        try harness.unlink(plansInode, "a.txt")
        try harness.unlink(plansInode, "b.txt")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        harness.filesystem.pollChangeFeedOnce()
        #expect(harness.pinnedFilesLocal(0))
    }

    @Test func unpinningLetsTheCopiesGo() throws {
        let (harness, siteInode, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plansInode, "user.sitefs.control.pin")
        let notes = try harness.lookup(siteInode, "notes.txt").attributes.inode
        try harness.filesystem.setExtendedAttribute(notes, name: "user.sitefs.pinned", value: Array("1".utf8), flags: 0,
                                                    context: harness.context)
        #expect(harness.pinnedFilesLocal(3))
        #expect(harness.contentFiles.count == 3)
        let answer = try harness.control(plansInode, "user.sitefs.control.unpin")
        #expect(!answer.pinned)
        #expect(eventually { harness.contentFiles.count == 1 })
        #expect(try harness.xattr(harness.lookup(plansInode, "a.txt").attributes.inode, "user.sitefs.state") == "online-only")
        try harness.filesystem.removeExtendedAttribute(notes, name: "user.sitefs.pinned", context: harness.context)
        #expect(eventually { harness.contentFiles.isEmpty })
        #expect(throws: Errno.noData) { try harness.xattr(notes, "user.sitefs.pinned") }
    }

    @Test func pinnedCopiesSurviveARestartOnlyIfUnchangedOnDisk() throws {
        let backend: InMemoryBackend, directory: URL
        do {
            let (first, _, plansInode) = try harness()
            _ = try first.control(plansInode, "user.sitefs.control.pin")
            #expect(first.pinnedFilesLocal(2))
            (backend, directory) = (first.backend, first.cacheDirectory)
            first.filesystem.unmounting()
        }
        // b.txt's copy is damaged while nothing runs: it must not be served as the server's.
        let content = directory.appendingPathComponent("content")
        let copies = try FileManager.default.contentsOfDirectory(atPath: content.path).map { content.appendingPathComponent($0).path }
        let damaged = try #require(copies.first { (try? String(contentsOfFile: $0, encoding: .utf8)) == "plan b" })
        try "plan X".write(toFile: damaged, atomically: false, encoding: .utf8)
        // The server is gone before the new mount starts: nothing can be fetched again, so
        // what reads is what was kept.
        backend.fail(with: .unreachable("test: the network is down"))
        let (second, _, plansInode) = try harness(reusing: directory, backend: backend)
        defer { second.remove(); second.filesystem.unmounting() }
        goOffline(second)
        #expect(try second.readAll(second.lookup(plansInode, "a.txt").attributes.inode) == Array("plan a".utf8))
        #expect(throws: Errno.networkUnreachable) { _ = try second.readAll(second.lookup(plansInode, "b.txt").attributes.inode) }
        // Shown by the keeper's first pass, which may still be on its way.
        #expect(eventually { second.filesystem.mountStatus.pins?.pinned == ["Harbour/Plans"] })
    }

    @Test func aPinPastTheCacheBudgetIsRefusedWithTheReason() throws {
        let (harness, siteInode, plansInode) = try harness(cacheSizeLimit: 8)
        defer { harness.remove(); harness.filesystem.unmounting() }
        let refused = try harness.control(plansInode, "user.sitefs.control.pin")  // 12 bytes
        #expect(!refused.pinned && refused.error?.contains("cache budget") == true, "\(refused)")
        #expect(throws: Errno.noSpace) {
            try harness.filesystem.setExtendedAttribute(plansInode, name: "user.sitefs.pinned", value: Array("1".utf8), flags: 0,
                                                        context: harness.context)
        }
        let notes = try harness.lookup(siteInode, "notes.txt").attributes.inode  // 5 bytes
        #expect(try harness.control(notes, "user.sitefs.control.pin").pinned)
        #expect(harness.pinnedFilesLocal(1))
    }

    @Test func anEditOfAPinnedFileIsKeptAsTheNewVersionOnceUploaded() throws {
        let (harness, _, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plansInode, "user.sitefs.control.pin")
        #expect(harness.pinnedFilesLocal(2))
        let a = try harness.lookup(plansInode, "a.txt").attributes.inode
        try harness.saveInPlace(a, "plan a, edited here")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(eventually { (try? harness.xattr(a, "user.sitefs.state")) == "downloaded" })
        goOffline(harness)
        #expect(try harness.readAll(a) == Array("plan a, edited here".utf8))
    }

    /// The pass an upload of a pinned file asks for can come to the file before the upload's
    /// outcome is reported (the save still shown as on its way). Held there by hooks: the
    /// report waits until the pass has come to the file. The pass must take the new version
    /// once reported, with no later pass to do it (the next timed one is a minute away).
    @Test func anEditOfAPinnedFileIsKeptWhenThePassComesBeforeItsReport() throws {
        let (harness, _, plansInode) = try harness()
        defer { harness.remove(); harness.filesystem.unmounting() }
        _ = try harness.control(plansInode, "user.sitefs.control.pin")
        #expect(harness.pinnedFilesLocal(2))
        let a = try harness.lookup(plansInode, "a.txt").attributes.inode

        let site = try #require(try harness.backend.sites(after: nil, limit: 10).items.first?.identifier)
        let plans = try #require(harness.backend.node(named: "Plans", in: site))
        let edited = try #require(harness.backend.node(named: "a.txt", in: plans.identifier)).identifier
        let visited = DispatchSemaphore(value: 0), reportHeld = DispatchSemaphore(value: 0)
        harness.filesystem.keeper.visitPause.withLock {
            $0 = { identifier in if identifier == edited { visited.signal() } }
        }
        harness.filesystem.appliedPause.withLock {
            $0 = { event in
                guard case .uploaded(let item, _) = event, item.identifier == edited else { return }
                reportHeld.signal()
                // Until the pass the event asked for is at the file (it may have been already).
                #expect(visited.wait(timeout: .now() + 10) == .success, "no pass came to the file")
            }
        }
        defer {
            harness.filesystem.appliedPause.withLock { $0 = nil }
            harness.filesystem.keeper.visitPause.withLock { $0 = nil }
        }
        try harness.saveInPlace(a, "plan a, edited here")
        #expect(reportHeld.wait(timeout: .now() + 10) == .success, "the upload was never applied")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(harness.pinnedFilesLocal(2))
        #expect(try harness.xattr(a, "user.sitefs.state") == "downloaded")
        goOffline(harness)
        #expect(try harness.readAll(a) == Array("plan a, edited here".utf8))
    }

    @Test func aFileSavedIntoAPinnedFolderBeforeARestartIsKeptOnceItsUploadIsDone() throws {
        let backend: InMemoryBackend, directory: URL
        weak var gone: SitefsFilesystem?
        do {
            let (first, _, plansInode) = try harness()
            _ = try first.control(plansInode, "user.sitefs.control.pin")
            #expect(first.pinnedFilesLocal(2))
            goOffline(first)
            try first.createFile(plansInode, "c.txt", "plan c")  // journaled; its copy goes with the process
            (backend, directory, gone) = (first.backend, first.cacheDirectory, first.filesystem)
            first.filesystem.unmounting()
        }
        // The first daemon is over (its workers stopped) before the server is back: only the
        // second one sends the journaled save.
        #expect(eventually { gone == nil })
        backend.fail(with: nil)
        let (second, _, plansInode) = try harness(reusing: directory, backend: backend)
        defer { second.remove(); second.filesystem.unmounting() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        // Sent from staging, which is gone now: the keeper must fetch it to keep it.
        #expect(second.pinnedFilesLocal(3))
        goOffline(second)
        #expect(try second.readAll(second.lookup(plansInode, "c.txt").attributes.inode) == Array("plan c".utf8))
    }
}
