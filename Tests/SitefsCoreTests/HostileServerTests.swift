import Foundation
import SitefsAPI
@testable import SitefsCore
import SitefsProvider
import SystemPackage
import SitefsTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a hostile or broken server sends must not hang, crash or confuse the mount (issue 17):
/// every loop it drives has a bound, every number it sends is checked before arithmetic, and
/// names are compared as bytes.
@Suite struct HostileServerTests {
    /// A fresh core with site "Harbour" holding a folder "Plans" (not listed yet).
    private func harness() throws -> (CoreHarness, plans: InodeNumber, plansID: ItemIdentifier) {
        let harness = try CoreHarness()
        let site = harness.backend.addSite("Harbour")
        let plansID = harness.backend.add("Plans", in: site, kind: .folder)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        return (harness, try harness.lookup(siteInode, "Plans").attributes.inode, plansID)
    }

    private func file(_ id: String, _ name: String, in folder: ItemIdentifier) -> ProviderItem {
        InMemoryBackend.item(ItemIdentifier(site: folder.site, id: id), parent: folder, name: name, kind: .file, readOnly: false)
    }

    @Test func aRepeatedCursorEndsTheListingWithEIO() throws {
        let (harness, plans, plansID) = try harness()
        defer { harness.remove() }
        let entry = file("900", "a.txt", in: plansID)
        harness.backend.craftChildren { _ in Page(items: [entry], next: PageToken("same")) }
        #expect(throws: Errno.ioError) { try harness.lookup(plans, "a.txt") }
        #expect(throws: Errno.ioError) { try harness.list(plans) }
        // The first page, its repeat, and one page fetched ahead each time at most.
        #expect(harness.backend.calls("children") <= 8, "\(harness.backend.calls("children")) listing requests")
    }

    @Test func freshCursorsForeverEndAtThePageBound() throws {
        let (harness, plans, _) = try harness()
        defer { harness.remove() }
        let served = Counter()
        harness.backend.craftChildren { token in
            served.add()
            return Page(items: [], next: PageToken(String((token.flatMap { Int($0.rawValue) } ?? 0) + 1)))
        }
        #expect(throws: Errno.ioError) { try harness.lookup(plans, "a.txt") }
        // 200 items a page asked for: the bound is 4 times the pages of the largest listing,
        // and the pages requested ahead of the reader may go past it.
        #expect(served.value <= 250_000 / 200 * 4 + 1 + ListingPages.depth, "\(served.value) pages")
    }

    @Test func twoEntriesWithOneNameShowOnce() throws {
        let (harness, plans, plansID) = try harness()
        defer { harness.remove() }
        let first = file("900", "a.txt", in: plansID), second = file("901", "a.txt", in: plansID), other = file("902", "b.txt", in: plansID)
        harness.backend.craftChildren { _ in Page(items: [first, second, other], next: nil) }
        #expect(try harness.listNames(plans) == ["a.txt", "b.txt"])
        let entries = try harness.list(plans).filter { $0.name.string == "a.txt" }
        #expect(entries.count == 1)
    }

    /// "café" in NFC and in NFD are two documents on the server (names are bytes): each path
    /// opens its own.
    @Test func namesThatRenderAlikeAreDifferentDocuments() throws {
        let (harness, plans, plansID) = try harness()
        defer { harness.remove() }
        let composed = "caf\u{E9}.txt", decomposed = "cafe\u{301}.txt"
        #expect(composed == decomposed, "Swift's String equality is canonical equivalence")
        harness.backend.add(composed, in: plansID, kind: .file, content: Array("composed".utf8))
        harness.backend.add(decomposed, in: plansID, kind: .file, content: Array("decomposed".utf8))
        let one = try harness.lookup(plans, composed).attributes.inode
        let other = try harness.lookup(plans, decomposed).attributes.inode
        #expect(one != other)
        #expect(try harness.readAll(one) == Array("composed".utf8))
        #expect(try harness.readAll(other) == Array("decomposed".utf8))
        #expect(try harness.listNames(plans).count == 2)
        // A write through one name lands in that document only.
        try harness.saveInPlace(other, "edited")
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.content(of: try #require(harness.backend.node(named: composed, in: plansID)).identifier) == Array("composed".utf8))
    }

    /// A listed size of 2^63 - 1 and `tail -c 10` trapped in the read-ahead arithmetic; now
    /// the read fails (the server cannot serve such a range) and the mount goes on.
    @Test func aHugeListedSizeGivesEIONotACrash() throws {
        let (harness, plans, plansID) = try harness()
        defer { harness.remove() }
        let identifier = harness.backend.add("huge.bin", in: plansID, kind: .file, content: Array("small".utf8))
        harness.backend.claimSize(Int64.max, of: identifier)
        let inode = try harness.lookup(plans, "huge.bin").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_RDONLY, context: harness.context).handle
        defer { harness.filesystem.release(inode, handle: handle, flags: O_RDONLY) }
        var buffer = [UInt8](repeating: 0, count: 10)
        #expect(throws: Errno.ioError) {
            _ = try buffer.withUnsafeMutableBytes { raw in
                try harness.filesystem.read(inode, handle: handle, offset: Int64.max - 10, size: 10, into: raw)
            }
        }
        #expect(try harness.listNames(plans) == ["huge.bin"], "the mount still answers")
    }

    @Test func aChangeFeedRepeatingItsCursorWithMoreIsNotAskedAgainAndBacksOff() throws {
        let (harness, _, _) = try harness()
        defer { harness.remove() }
        harness.filesystem.pollChangeFeedOnce()  // takes the cursor
        let before = harness.backend.calls("changes")
        harness.backend.craftChanges { token in ChangeBatch(changes: [], next: token ?? PageToken("c"), hasMore: true) }
        harness.filesystem.pollChangeFeedOnce()
        #expect(harness.backend.calls("changes") - before == 1, "the repeated cursor was asked again")
        #expect(harness.filesystem.changeFeedWait > .seconds(3), "no back-off after a bad round")
        harness.backend.craftChanges(nil)
        harness.filesystem.pollChangeFeedOnce()
        #expect(harness.filesystem.changeFeedWait == .seconds(3), "a good round ends the back-off")
    }

    @Test func aChangeFeedWithMoreForeverIsBoundedPerRound() throws {
        let (harness, _, _) = try harness()
        defer { harness.remove() }
        harness.filesystem.pollChangeFeedOnce()
        let before = harness.backend.calls("changes")
        harness.backend.craftChanges { token in
            ChangeBatch(changes: [], next: PageToken(String((token.flatMap { Int($0.rawValue) } ?? 0) + 1)), hasMore: true)
        }
        harness.filesystem.pollChangeFeedOnce()
        #expect(harness.backend.calls("changes") - before == 100)
    }
}

/// A count shared with a `@Sendable` closure.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
