import Foundation
import SitefsProvider
@testable import SitefsStore
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The cache's content areas: a local copy per item, and snapshots in staging that are on
/// the disk, name and bytes, before a save returns.
@Suite struct ContentDirectoryTests {
    private func write(_ text: String, to path: String) throws -> Int32 {
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0, "open \(path): \(ContentDirectory.lastError)")
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } == bytes.count)
        return descriptor
    }

    private func text(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    private func info(_ path: String) -> stat {
        var info = stat()
        _ = lstat(path, &info)
        return info
    }

    /// A pinned file's copy outlives the daemon and its upgrades: its name must stay the
    /// identifier's UTF-8 bytes in lowercase hex, site, a dash, then id.
    @Test func aCopyIsNamedByItsIdentifierInHex() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let path = directory.copyPath(for: ItemIdentifier(site: "S1", id: "é/x\u{7f}\u{0}"))
        #expect(path == directory.content.path + "/5331-c3a92f787f00")
    }

    @Test func itsAreasArePrivateToTheUser() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        for area in [directory.content, directory.staging] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: area.path)[.posixPermissions] as? Int)
            #expect(mode == 0o700, "\(area.lastPathComponent)")
        }
    }

    @Test func everyItemHasACopyPathOfItsOwnInsideContent() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        // Server ids are opaque: separators, dots and slashes must neither collide nor escape.
        let identifiers = [ItemIdentifier(site: "a-b", id: "c"), ItemIdentifier(site: "a", id: "b-c"),
                           ItemIdentifier(site: "1", id: "../../etc"), ItemIdentifier(site: "1", id: "x/y"),
                           ItemIdentifier(site: "1", id: "local:1"), ItemIdentifier(site: "1", id: "")]
        let paths = identifiers.map(directory.copyPath(for:))
        #expect(Set(paths).count == identifiers.count)
        for path in paths {
            #expect(URL(fileURLWithPath: path).deletingLastPathComponent().path == directory.content.path, "\(path)")
        }
        #expect(directory.copyPath(for: identifiers[0]) == paths[0], "the same item, the same path")
    }

    @Test func aSnapshotCopiedIntoStagingHasTheBytesAndOutlivesTheCopy() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let copy = directory.copyPath(for: ItemIdentifier(site: "1", id: "7"))
        let descriptor = try write("the saved text", to: copy)
        defer { close(descriptor) }
        let staged = try directory.stage(from: descriptor)
        #expect(URL(fileURLWithPath: staged).deletingLastPathComponent().path == directory.staging.path)
        #expect(info(staged).st_ino != info(copy).st_ino, "a copy, not a link")
        // The copy changes on: the snapshot keeps what was saved.
        _ = try write("edited after the save", to: copy)
        #expect(try text(staged) == "the saved text")
    }

    @Test func aSnapshotLinkedIntoStagingIsTheSameFile() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let copy = directory.copyPath(for: ItemIdentifier(site: "1", id: "7"))
        let descriptor = try write("linked", to: copy)
        let staged = try #require(try directory.stage(linking: copy, descriptor: descriptor), "the temporary directory has hard links")
        #expect(info(staged).st_ino == info(copy).st_ino && info(copy).st_nlink == 2)
        #expect(try text(staged) == "linked")
        // The copy's name is free again at once (a later open makes a new copy there).
        directory.discardCopy(at: copy, descriptor: descriptor)
        #expect(access(copy, F_OK) != 0)
        #expect(try text(staged) == "linked")
    }

    @Test func aLinkToAnotherFileThanTheOneOpenIsRefused() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let copy = directory.copyPath(for: ItemIdentifier(site: "1", id: "7"))
        let other = try write("another file", to: directory.copyPath(for: ItemIdentifier(site: "1", id: "8")))
        defer { close(other) }
        _ = try write("the copy", to: copy)
        #expect(try directory.stage(linking: copy, descriptor: other) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.staging.path).isEmpty, "the wrong link was left in staging")
        #expect(try directory.stage(linking: scratch.path("missing"), descriptor: other) == nil)
    }

    @Test func copyAllCopiesEveryByteFromTheStart() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        // Larger than one buffer of the fallback, not a multiple of it.
        let bytes = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: scratch.url.appendingPathComponent("source"))
        let target = open(scratch.path("target"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(target) }
        #expect(ContentDirectory.copyFile(from: scratch.path("source"), to: target))
        #expect(try Data(contentsOf: scratch.url.appendingPathComponent("target")) == Data(bytes))
        #expect(!ContentDirectory.copyFile(from: scratch.path("missing"), to: target))
    }

    @Test func leftoversGoButWhatTheJournalNamesAndPinnedCopiesStay() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let journaled = directory.staging.appendingPathComponent("journaled").path
        let orphan = directory.staging.appendingPathComponent("orphan").path
        let pinned = directory.copyPath(for: ItemIdentifier(site: "1", id: "p"))
        let old = directory.copyPath(for: ItemIdentifier(site: "1", id: "o"))
        for path in [journaled, orphan, pinned, old] { close(try write(path, to: path)) }
        // The last mount's spares: one is kept for new copies, one that is not empty goes.
        let spent = directory.copyPath(for: ItemIdentifier(site: "1", id: "s"))
        directory.discardCopy(at: spent, descriptor: directory.newCopy(at: spent))
        let spare = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.content.path).first { $0.hasPrefix("spare-") })
        let forged = directory.content.appendingPathComponent("spare-77").path
        close(try write("not empty", to: forged))
        let remounted = try ContentDirectory(cacheDirectory: scratch.url)
        remounted.removeLeftovers(keeping: [journaled], copies: [pinned])
        #expect(access(journaled, F_OK) == 0 && access(pinned, F_OK) == 0)
        #expect(access(orphan, F_OK) != 0 && access(old, F_OK) != 0)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.content.path).sorted()
        #expect(left == [URL(fileURLWithPath: pinned).lastPathComponent, spare].sorted())
        #expect(remounted.spares.count == 1)
        // A new spare is named after the ones taken in, never over one.
        let next = directory.copyPath(for: ItemIdentifier(site: "1", id: "n"))
        remounted.discardCopy(at: next, descriptor: try write("", to: next))
        #expect(remounted.spares.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.content.path).filter { $0.hasPrefix("spare-") }.count == 2)
    }

    /// A discarded copy's file becomes the next new copy, by a rename (no inode made or
    /// freed, see `SpareCopyFiles`): empty, dated now and of mode 0600 under its new name,
    /// the old name gone.
    @Test func aDiscardedCopyBecomesTheNextNewCopyEmptyAndDatedNow() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let first = directory.copyPath(for: ItemIdentifier(site: "1", id: "a"))
        let made = directory.newCopy(at: first)
        try #require(made >= 0, "\(ContentDirectory.lastError)")
        let bytes = Array("a draft".utf8)
        #expect(bytes.withUnsafeBytes { pwrite(made, $0.baseAddress, $0.count, 0) } == bytes.count)
        var longAgo = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(futimens(made, &longAgo) == 0)
        let inode = info(first).st_ino
        directory.discardCopy(at: first, descriptor: made)
        #expect(access(first, F_OK) != 0)
        #expect(directory.spares.count == 1)

        let second = directory.copyPath(for: ItemIdentifier(site: "1", id: "b"))
        let started = time(nil)
        let reused = directory.newCopy(at: second)
        try #require(reused >= 0)
        defer { close(reused) }
        let now = info(second)
        #expect(now.st_ino == inode && now.st_size == 0 && now.st_nlink == 1 && now.st_mode & 0o7777 == 0o600)
        #expect(now.st_mtim.tv_sec >= started)
        #expect(directory.spares.count == 0)
        // With none kept, the next copy is a file made there.
        let third = directory.copyPath(for: ItemIdentifier(site: "1", id: "c"))
        let fresh = directory.newCopy(at: third)
        try #require(fresh >= 0)
        close(fresh)
        #expect(info(third).st_ino != inode)
    }

    /// Only a small copy with one link is kept: one that is also a staged snapshot (hard
    /// linked) is deleted and the snapshot keeps its bytes; a large one is deleted; and no
    /// more than the capacity are kept, the rest deleted.
    @Test func onlySmallUnsharedCopiesAreKeptUpToTheCapacity() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let directory = try ContentDirectory(cacheDirectory: scratch.url)
        let shared = directory.copyPath(for: ItemIdentifier(site: "1", id: "shared"))
        let sharing = try write("saved", to: shared)
        let snapshot = directory.staging.appendingPathComponent("snapshot").path
        #expect(link(shared, snapshot) == 0)
        directory.discardCopy(at: shared, descriptor: sharing)
        #expect(access(shared, F_OK) != 0 && directory.spares.count == 0)
        #expect(try text(snapshot) == "saved")

        let large = directory.copyPath(for: ItemIdentifier(site: "1", id: "large"))
        let big = try write("x", to: large)
        #expect(ftruncate(big, off_t(SpareCopyFiles.largestKept + 1)) == 0)
        directory.discardCopy(at: large, descriptor: big)
        directory.unlinker.drain()
        #expect(access(large, F_OK) != 0 && directory.spares.count == 0)

        let many = SpareCopyFiles.capacity + 3
        let paths = (0..<many).map { directory.copyPath(for: ItemIdentifier(site: "2", id: "\($0)")) }
        let descriptors = paths.map(directory.newCopy(at:))
        for (path, descriptor) in zip(paths, descriptors) { directory.discardCopy(at: path, descriptor: descriptor) }
        directory.unlinker.drain()
        #expect(directory.spares.count == SpareCopyFiles.capacity)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.content.path)
        #expect(left.count == SpareCopyFiles.capacity && left.allSatisfy { $0.hasPrefix("spare-") })
    }
}
