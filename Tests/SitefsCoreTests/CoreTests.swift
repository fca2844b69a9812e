import Foundation
import Glibc
@testable import SitefsCore
import Synchronization
import SitefsProvider
import SystemPackage
import SitefsTestSupport
import Testing

@Suite struct NamespaceCoreTests {
    @Test func rootListsSitesWithCollisionsMadeUniqueDeterministically() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        harness.backend.addSite("Harbour")
        harness.backend.addSite("School")
        harness.backend.addSite("Harbour")
        let names = try harness.list(.root).map(\.name.description)
        #expect(names == [".", "..", "Harbour", "School", "Harbour (2)"])
        let first = try harness.lookup(.root, "Harbour")
        let second = try harness.lookup(.root, "Harbour (2)")
        #expect(first.attributes.inode != second.attributes.inode)
        #expect(first.attributes.mode == 0o040755)
        #expect(throws: Errno.noSuchFileOrDirectory) { try harness.lookup(.root, "Nowhere") }
    }

    @Test func readdirOffsetsAreStableAcrossPagesAndSmallBuffers() throws {
        let harness = try CoreHarness(pageSize: 7)
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        for index in 0..<50 { harness.backend.add(String(format: "file %02d", index), in: site, kind: .file) }
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        for perCall in [1, 3, 5, 64] {
            let names = try harness.list(siteInode, plus: true, perCall: perCall).map(\.name.description).filter { !$0.hasPrefix(".") }
            #expect(names == (0..<50).map { String(format: "file %02d", $0) }, "perCall \(perCall)")
        }
        // Pages were fetched as the reads went: 50 items / 7 per page = 8 requests.
        #expect(harness.backend.calls("children") == 8)
    }

    /// A site of 25 files listed 10 per page, opened as a directory.
    private func openSiteOf25Files(_ harness: CoreHarness) throws -> (InodeNumber, HandleID) {
        let site = harness.backend.addSite("Harbour")
        for index in 0..<25 { harness.backend.add(String(format: "file %02d", index), in: site, kind: .file) }
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (siteInode, try harness.filesystem.openDirectory(siteInode, flags: 0, context: harness.context))
    }

    /// Names from `offset` to the end, read `perCall` entries per readdir.
    private func readNames(_ harness: CoreHarness, _ inode: InodeNumber, _ handle: HandleID, from offset: UInt64,
                           perCall: Int) throws -> [String] {
        var names: [String] = []
        var offset = offset
        while true {
            var batch: [DirectoryEntry] = []
            try harness.filesystem.readDirectory(inode, handle: handle, offset: offset, plus: false, context: harness.context) {
                guard batch.count < perCall else { return false }
                batch.append($0)
                return true
            }
            if batch.isEmpty { return names }
            names += batch.map(\.name.description)
            offset = batch.last!.nextOffset
        }
    }

    @Test func theNextPageIsFetchedWhileTheCurrentOneIsRead() throws {
        let harness = try CoreHarness(pageSize: 10)
        defer { harness.remove() }
        let (inode, handle) = try openSiteOf25Files(harness)
        defer { harness.filesystem.releaseDirectory(inode, handle: handle) }
        // One readdir that takes ".", "..", and the first page's first file only.
        var seen = 0
        try harness.filesystem.readDirectory(inode, handle: handle, offset: 0, plus: false, context: harness.context) { _ in
            seen += 1
            return seen <= 3
        }
        // Nobody asked for pages two and three, yet they are fetched (the depth ahead is two).
        #expect(ListingPages.depth == 2)
        _ = eventually { harness.backend.calls("children") >= 3 }
        #expect(harness.backend.calls("children") == 3)
        // The reader then gets them without asking the server again.
        let rest = try readNames(harness, inode, handle, from: 3, perCall: 7)
        #expect(rest == (1..<25).map { String(format: "file %02d", $0) })
        #expect(harness.backend.calls("children") == 3)
    }

    @Test func aFailedReadAheadIsFetchedAgainByTheReader() throws {
        let harness = try CoreHarness(pageSize: 10)
        defer { harness.remove() }
        let (inode, handle) = try openSiteOf25Files(harness)
        defer { harness.filesystem.releaseDirectory(inode, handle: handle) }
        harness.backend.failListings(after: 1)  // page one comes; the read-ahead of page two fails
        var names: [String] = []
        try harness.filesystem.readDirectory(inode, handle: handle, offset: 0, plus: false, context: harness.context) {
            guard names.count < 5 else { return false }
            names.append($0.name.description)
            return true
        }
        // The read-ahead's failure is decided before failures stop (the reader then waits for
        // that fetch to end and fetches the page again itself).
        #expect(eventually { harness.backend.listingsRefused == 1 })
        harness.backend.failListings(after: nil)
        names += try readNames(harness, inode, handle, from: 5, perCall: 7)
        #expect(names.filter { !$0.hasPrefix(".") } == (0..<25).map { String(format: "file %02d", $0) })
        // Page one, the failed read-ahead, page two again by the reader, page three ahead.
        #expect(harness.backend.calls("children") == 4)
    }

    @Test func readdirplusCountsOnlyPlacedEntries() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("a.txt", in: site, kind: .file)
        harness.backend.add("b.txt", in: site, kind: .file)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let entries = try harness.list(siteInode, plus: true, perCall: 3)  // ".", "..", "a.txt" then "b.txt"
        let files = entries.filter { !$0.name.description.hasPrefix(".") }
        #expect(files.count == 2 && files.allSatisfy { $0.entry != nil })
        // Each file was placed exactly once: forgetting one reference returns each to zero,
        // which a second lookup then raises to one again.
        for file in files { harness.filesystem.forget(file.inode, lookups: 1) }
        let again = try harness.lookup(siteInode, "a.txt")
        #expect(again.attributes.inode == files[0].inode)  // inode numbers are stable
    }

    @Test func capabilitiesBecomeModes() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let writable = harness.backend.addSite("Writable")
        let readOnly = harness.backend.addSite("ReadOnly", readOnly: true)
        harness.backend.add("doc.txt", in: writable, kind: .file)
        harness.backend.add("doc.txt", in: readOnly, kind: .file, readOnly: true)
        harness.backend.add("folder", in: readOnly, kind: .folder, readOnly: true)
        let w = try harness.lookup(.root, "Writable").attributes.inode
        let r = try harness.lookup(.root, "ReadOnly").attributes.inode
        #expect(try harness.lookup(w, "doc.txt").attributes.mode == 0o100644)
        #expect(try harness.lookup(r, "doc.txt").attributes.mode == 0o100444)
        #expect(try harness.lookup(r, "folder").attributes.mode == 0o040555)
        #expect(try harness.lookup(.root, "ReadOnly").attributes.mode == 0o040555)
        #expect(try harness.filesystem.attributes(of: .root, handle: nil, context: harness.context).attributes.mode == 0o040555)
        #expect(throws: Errno.permissionDenied) {
            try harness.filesystem.makeDirectory(parent: r, name: FileName("new"), mode: 0o755, context: harness.context)
        }
        let docInode = try harness.lookup(r, "doc.txt").attributes.inode
        #expect(throws: Errno.permissionDenied) { try harness.filesystem.open(docInode, flags: O_WRONLY, context: harness.context) }

        let mountedReadOnly = try CoreHarness(readOnly: true)
        defer { mountedReadOnly.remove() }
        let site = mountedReadOnly.backend.addSite("Writable")
        mountedReadOnly.backend.add("doc.txt", in: site, kind: .file)
        let siteInode = try mountedReadOnly.lookup(.root, "Writable").attributes.inode
        #expect(try mountedReadOnly.lookup(siteInode, "doc.txt").attributes.mode == 0o100444)
    }

    @Test func providerErrorsMapToErrnos() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("a.txt", in: site, kind: .file)
        let cases: [(ProviderError, Errno)] = [
            (.unreachable("down"), .ioError), (.serverUnavailable(status: 503, message: "busy"), .ioError),
            (.notAuthenticated("expired"), .permissionDenied), (.forbidden("no"), .permissionDenied),
            (.notFound, .noSuchFileOrDirectory), (.invalidResponse("bad json"), .ioError),
        ]
        for (error, errno) in cases {
            let fresh = try CoreHarness()
            defer { fresh.remove() }
            fresh.backend.addSite("Harbour")
            fresh.backend.fail(with: error)
            #expect(throws: errno, "\(error)") { try fresh.lookup(.root, "Harbour") }
        }
        #expect(ProviderError.crossSite.isTransient == false)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        #expect(throws: Errno.fileExists) {
            try harness.filesystem.makeDirectory(parent: siteInode, name: FileName("a.txt"), mode: 0o755, context: harness.context)
        }
        #expect(throws: Errno.fileNameTooLong) { try harness.lookup(siteInode, String(repeating: "x", count: 256)) }
        #expect(throws: Errno.invalidArgument) {
            try harness.filesystem.lookup(parent: siteInode, name: FileName(bytes: [0xFF]), context: harness.context)
        }
    }

    @Test func renameAcrossSitesIsEXDEVAndRmdirOfAFullFolderIsENOTEMPTY() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let one = harness.backend.addSite("One")
        harness.backend.addSite("Two")
        let folder = harness.backend.add("folder", in: one, kind: .folder)
        harness.backend.add("inside.txt", in: folder, kind: .file)
        let oneInode = try harness.lookup(.root, "One").attributes.inode
        let twoInode = try harness.lookup(.root, "Two").attributes.inode
        #expect(throws: Errno.improperLink) {
            try harness.filesystem.rename(parent: oneInode, name: FileName("folder"), newParent: twoInode, newName: FileName("folder"),
                                          flags: 0, context: harness.context)
        }
        #expect(throws: Errno.directoryNotEmpty) {
            try harness.filesystem.removeDirectory(parent: oneInode, name: FileName("folder"), context: harness.context)
        }
    }
}

@Suite struct ContentCoreTests {
    @Test func statAndListingDownloadNothing() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("big.bin", in: site, kind: .file, content: Array(repeating: 7, count: 100_000))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        _ = try harness.list(siteInode, plus: true)
        let entry = try harness.lookup(siteInode, "big.bin")
        #expect(entry.attributes.size == 100_000 && entry.attributes.blocks == 196)
        #expect(harness.backend.calls("fetch") == 0)
    }

    /// A core over a backend holding one site with one file of `size` patterned bytes (no
    /// two neighbouring windows alike); the file's inode and content.
    private func harnessWithRemoteFile(_ name: String, size: Int, step: Int) throws -> (CoreHarness, InodeNumber, [UInt8]) {
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 * step) }
        let harness = try CoreHarness()
        let site = harness.backend.addSite("Harbour")
        harness.backend.add(name, in: site, kind: .file, content: content)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (harness, try harness.lookup(siteInode, name).attributes.inode, content)
    }

    @Test func partialReadOfARemoteFileFetchesARange() throws {
        let (harness, inode, content) = try harnessWithRemoteFile("big.bin", size: 4 << 20, step: 7)
        defer { harness.remove() }
        let handle = try harness.filesystem.open(inode, flags: O_RDONLY, context: harness.context).handle
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = try buffer.withUnsafeMutableBytes { (raw) throws -> Int in
            try harness.filesystem.read(inode, handle: handle, offset: 1000, size: 4096, into: raw)
        }
        harness.filesystem.release(inode, handle: handle, flags: O_RDONLY)
        #expect(count == 4096 && buffer == Array(content[1000..<5096]))
        #expect(harness.backend.bytesFetched <= 256 << 10)
        #expect(harness.contentFiles.isEmpty)
        // A full sequential read returns everything, in growing windows.
        #expect(try harness.readAll(inode) == content)
    }

    @Test func aRemoteReadIsServedOnceItsBytesArriveNotWhenItsWholeWindowHas() throws {
        let (harness, inode, content) = try harnessWithRemoteFile("plan.pdf", size: 1 << 20, step: 13)
        defer { harness.remove() }
        let handle = try harness.filesystem.open(inode, flags: O_RDONLY, context: harness.context).handle
        harness.backend.holdFetchesHalfway(true)
        let served = Mutex<[UInt8]?>(nil)
        let reader = Thread {
            guard let lease = try? harness.filesystem.lend(inode, handle: handle, offset: 0, size: 4096) else { return }
            served.withLock { $0 = Array(lease.bytes) }
            lease.end()
        }
        reader.start()
        _ = eventually(timeout: .seconds(5)) { served.withLock { $0 != nil } }
        let servedWhileHeld = served.withLock { $0 != nil }
        let stillHeld = harness.backend.fetchesHeld
        harness.backend.holdFetchesHalfway(false)
        #expect(servedWhileHeld && stillHeld == 1)
        #expect(served.withLock { $0 } == Array(content[0..<4096]))
        // Reads out of order, across windows and the end, lent or copied, get the right bytes.
        for offset in [300_000, 4096, 900_000, 131_072, (1 << 20) - 100, 600_000] {
            let lease = try harness.filesystem.lend(inode, handle: handle, offset: Int64(offset), size: 70_000)
            #expect(Array(lease.bytes) == Array(content[offset..<min(offset + 70_000, content.count)]))
            lease.end()
        }
        harness.filesystem.release(inode, handle: handle, flags: O_RDONLY)
        #expect(try harness.readAll(inode) == content)
    }

    @Test func aSequentialReadFetchesEachByteOnce() throws {
        // Windows ahead of the reader finish before it gets there (as on a fast network):
        // the window it is in must stay, or its next reads fetch again what was fetched.
        let (harness, inode, content) = try harnessWithRemoteFile("drawings.pdf", size: 40 << 20, step: 29)
        defer { harness.remove() }
        let handle = try harness.filesystem.open(inode, flags: O_RDONLY, context: harness.context).handle
        var offset = 0
        while offset < content.count {
            let lease = try harness.filesystem.lend(inode, handle: handle, offset: Int64(offset), size: 256 << 10)
            #expect(lease.bytes.elementsEqual(content[offset..<min(offset + (256 << 10), content.count)]))
            offset += lease.bytes.count
            lease.end()
            usleep(200)  // the kernel's pace, roughly: the fetches ahead finish meanwhile
        }
        harness.filesystem.release(inode, handle: handle, flags: O_RDONLY)
        #expect(harness.backend.bytesFetched == content.count,
                "fetched (KiB from, KiB): \(harness.backend.fetchedRanges.map { ($0.lowerBound >> 10, $0.count >> 10) })")
    }

    @Test func concurrentOpensShareOneDownload() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("shared.txt", in: site, kind: .file, content: Array("shared content".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "shared.txt").attributes.inode
        harness.backend.delayFetches(by: 0.3)
        let results = Mutex<[[UInt8]]>([])
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread {
                defer { group.leave() }
                if let bytes = try? harness.readAll(inode, flags: O_RDWR) { results.withLock { $0.append(bytes) } }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 10) == .success)
        #expect(results.withLock { $0 } == Array(repeating: Array("shared content".utf8), count: 4))
        #expect(harness.backend.calls("fetch") == 1)
    }

    @Test func writeCloseUploadsWithTheBaseVersionAndCleansUp() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let file = harness.backend.add("notes.txt", in: site, kind: .file, content: Array("hello".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "notes.txt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_RDWR, context: harness.context).handle
        try harness.write(inode, handle: handle, Array(" world".utf8), at: 5)
        #expect(try harness.filesystem.attributes(of: inode, handle: handle, context: harness.context).attributes.size == 11)
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        harness.filesystem.release(inode, handle: handle, flags: O_RDWR)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: file) == Array("hello world".utf8))
        #expect(harness.backend.calls("modifyContent") == 1)
        #expect(harness.contentFiles.isEmpty)
        #expect(harness.filesystem.uploadStatus.failed.isEmpty)
    }

    @Test func aSaveLinksTheCopyAndTheNextChangeLeavesTheSnapshotAsItWas() throws {
        let harness = try CoreHarness()  // the settle delay keeps each snapshot queued meanwhile
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let file = harness.backend.add("form.txt", in: site, kind: .file, content: Array("original".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "form.txt").attributes.inode
        func snapshot() throws -> (text: String, links: Int) {
            let staged = try #require(harness.stagedFiles.first, "no snapshot in staging")
            var info = stat()
            #expect(harness.stagedFiles.count == 1 && lstat(staged, &info) == 0)
            return (String(decoding: try Data(contentsOf: URL(fileURLWithPath: staged)), as: UTF8.self), Int(info.st_nlink))
        }
        let handle = try harness.filesystem.open(inode, flags: O_RDWR, context: harness.context).handle
        try harness.write(inode, handle: handle, Array("first save".utf8))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        // The snapshot is the copy's own file (a hard link), not a copy of it.
        #expect(try snapshot() == ("first save", 2))
        // A write, a truncate and an open with O_TRUNC each leave the snapshot as it was.
        try harness.write(inode, handle: handle, Array("SECOND".utf8))
        #expect(try snapshot() == ("first save", 1))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        #expect(try snapshot() == ("SECONDsave", 2))
        _ = try harness.filesystem.setAttributes(of: inode, AttributeChanges(size: 3), handle: handle, context: harness.context)
        #expect(try snapshot() == ("SECONDsave", 1))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        #expect(try snapshot() == ("SEC", 2))
        let second = try harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: harness.context).handle
        #expect(try snapshot() == ("SEC", 1))
        try harness.write(inode, handle: second, Array("third".utf8))
        try harness.filesystem.flush(inode, handle: second, context: harness.context)
        harness.filesystem.release(inode, handle: second, flags: O_WRONLY)
        harness.filesystem.release(inode, handle: handle, flags: O_RDWR)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: file) == Array("third".utf8))
        #expect(harness.backend.calls("modifyContent") == 1)
        #expect(harness.stagingIsEmpty && harness.contentFiles.isEmpty)
    }

    @Test func aConflictingUploadIsSavedNextToTheServerVersion() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let file = harness.backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let inode = try harness.lookup(siteInode, "plan.txt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: harness.context).handle
        // Someone else saves first.
        let other = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try Data("theirs".utf8).write(to: other)
        defer { try? FileManager.default.removeItem(at: other) }
        _ = try harness.backend.modifyContent(of: file, baseVersion: nil, contentsOf: other.path)
        try harness.write(inode, handle: handle, Array("mine".utf8))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        harness.filesystem.release(inode, handle: handle, flags: O_WRONLY)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: file) == Array("theirs".utf8))  // never overwritten
        let status = harness.filesystem.uploadStatus
        #expect(status.failed.isEmpty && status.conflicts.count == 1)
        let savedAs = try #require(status.conflicts.first?.savedAs)
        #expect(savedAs.hasPrefix("plan (conflict ") && savedAs.hasSuffix(" sitefs).txt"), "\(savedAs)")
        let conflictCopy = try #require(harness.backend.node(named: savedAs, in: site))
        #expect(harness.backend.content(of: conflictCopy.identifier) == Array("mine".utf8))
        #expect(try harness.list(siteInode).map(\.name.description).contains(savedAs))
        // The copy names the server's version its edit did not replace.
        let theirs = try harness.backend.item(file)
        #expect(status.conflicts.first?.conflictsWith?.version == theirs.version)
        let copyInode = try harness.lookup(siteInode, savedAs).attributes.inode
        let versus = try harness.xattr(copyInode, "user.sitefs.conflict_with")
        #expect(versus.hasPrefix("version \(theirs.version.prefix(12)) of "), "\(versus)")
        #expect(try harness.filesystem.listExtendedAttributes(copyInode, context: harness.context).contains("user.sitefs.conflict_with"))
    }

    @Test func aJournaledSaveIsUploadedByTheNextMount() throws {
        var first: CoreHarness? = try CoreHarness()
        let site = first!.backend.addSite("Harbour")
        let file = first!.backend.add("diary.txt", in: site, kind: .file, content: Array("v1".utf8))
        let siteInode = try first!.lookup(.root, "Harbour").attributes.inode
        let inode = try first!.lookup(siteInode, "diary.txt").attributes.inode
        first!.backend.fail(with: .unreachable("server down"))
        let handle = try first!.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: first!.context).handle
        try first!.write(inode, handle: handle, Array("v2 saved offline".utf8))
        try first!.filesystem.flush(inode, handle: handle, context: first!.context)  // journaled here
        #expect(first!.filesystem.uploadStatus.pending == 1)
        let previous = first!
        first = nil  // the daemon dies; nothing reached the server
        #expect(previous.backend.content(of: file) == Array("v1".utf8))
        previous.backend.fail(with: nil)

        let second = try CoreHarness(reusing: previous)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(second.backend.content(of: file) == Array("v2 saved offline".utf8))
        let staging = try FileManager.default.contentsOfDirectory(atPath: second.cacheDirectory.appendingPathComponent("staging").path)
        #expect(staging.isEmpty)
    }

    @Test func aRemountTrustsTheMetadataCacheOnlyAfterACleanShutdown() throws {
        let first = try CoreHarness()
        let site = first.backend.addSite("Harbour")
        let file = first.backend.add("a.txt", in: site, kind: .file)
        let firstSite = try first.lookup(.root, "Harbour").attributes.inode
        _ = try first.lookup(firstSite, "a.txt")
        first.filesystem.unmounting()  // the listing is written; no clean-shutdown mark
        // The server's file gets a name the cache never saw (as when a kill comes right after
        // a rename the journal already counts as done).
        _ = try first.backend.update(file, ItemChanges(name: "b.txt"), baseVersion: nil)

        let second = try CoreHarness(reusing: first)
        let secondSite = try second.lookup(.root, "Harbour").attributes.inode
        // Not trusted: the listing is asked for again, so the new name is found (a create of
        // "b.txt" would otherwise make a second file hiding the server's).
        #expect(try second.lookup(secondSite, "b.txt").attributes.inode != 0)
        #expect(throws: Errno.noSuchFileOrDirectory) { try second.lookup(secondSite, "a.txt") }
        second.filesystem.unmounting()
        second.filesystem.recordCleanShutdown()

        let third = try CoreHarness(reusing: second)
        defer { third.remove() }
        let listingsBefore = third.backend.calls("children") + third.backend.calls("sites")
        let thirdSite = try third.lookup(.root, "Harbour").attributes.inode
        #expect(try third.lookup(thirdSite, "b.txt").attributes.inode != 0)
        // After a clean shutdown the cache is current: no listing asked of the server.
        #expect(third.backend.calls("children") + third.backend.calls("sites") == listingsBefore)
    }

    @Test func newFilesAreCreatedAndTheirContentUploadedOnClose() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let (entry, open) = try harness.filesystem.create(parent: siteInode, name: FileName("new.txt"), mode: 0o644,
                                                          flags: O_WRONLY | O_CREAT, context: harness.context)
        try harness.write(entry.attributes.inode, handle: open.handle, Array("fresh".utf8))
        try harness.filesystem.flush(entry.attributes.inode, handle: open.handle, context: harness.context)
        harness.filesystem.release(entry.attributes.inode, handle: open.handle, flags: O_WRONLY)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        let created = try #require(harness.backend.node(named: "new.txt", in: site))
        #expect(harness.backend.content(of: created.identifier) == Array("fresh".utf8))
        #expect(try harness.list(siteInode).map(\.name.description).contains("new.txt"))
        #expect(harness.contentFiles.isEmpty)
    }

    @Test func onlyWriteOnlyHandlesAskForTheirWritesToBypassThePageCache() throws {
        let (harness, inode, _) = try harnessWithRemoteFile("plan.txt", size: 100, step: 1)
        defer { harness.remove() }
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        var bypasses: [Int32: Bool] = [:]
        for flags in [O_RDONLY, O_RDWR, O_WRONLY, O_WRONLY | O_TRUNC, O_WRONLY | O_APPEND] {
            let open = try harness.filesystem.open(inode, flags: flags, context: harness.context)
            bypasses[flags] = open.writesBypassCache
            #expect(!open.directIO)  // reads and maps keep the page cache
            harness.filesystem.release(inode, handle: open.handle, flags: flags)
        }
        #expect(bypasses == [O_RDONLY: false, O_RDWR: false, O_WRONLY: true, O_WRONLY | O_TRUNC: true, O_WRONLY | O_APPEND: true])
        for (name, flags) in [("a.txt", O_WRONLY | O_CREAT), ("b.txt", O_RDWR | O_CREAT)] {
            let (entry, open) = try harness.filesystem.create(parent: siteInode, name: FileName(name), mode: 0o644,
                                                              flags: flags, context: harness.context)
            #expect(open.writesBypassCache == (flags & O_ACCMODE == O_WRONLY))
            harness.filesystem.release(entry.attributes.inode, handle: open.handle, flags: flags)
        }
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
    }

    @Test func renameOverKeepsTheTargetIdentityAndRebindsTheInode() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let site = harness.backend.addSite("Harbour")
        let original = harness.backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        harness.backend.add("tmp123", in: site, kind: .file, content: Array("new".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let tempInode = try harness.lookup(siteInode, "tmp123").attributes.inode
        _ = try harness.lookup(siteInode, "doc.odt")
        try harness.filesystem.rename(parent: siteInode, name: FileName("tmp123"), newParent: siteInode, newName: FileName("doc.odt"),
                                      flags: 0, context: harness.context)
        #expect(harness.backend.content(of: original) == Array("new".utf8))
        #expect(try harness.lookup(siteInode, "doc.odt").attributes.inode == tempInode)
        #expect(throws: Errno.noSuchFileOrDirectory) { try harness.lookup(siteInode, "tmp123") }
        #expect(try harness.readAll(tempInode) == Array("new".utf8))
    }
}
