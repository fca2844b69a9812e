import Foundation
@testable import SitefsWebDAVBackend
import Testing

/// Stable identities for path-named items: what survives renames, remounts and the server's
/// own file ids.
@Suite struct IdentityTableTests {
    private func sighting(_ name: String, collection: Bool = false, fileID: String? = nil) -> IdentityTable.Sighting {
        .init(name: name, isCollection: collection, fileID: fileID)
    }

    /// A table file of a test's own, in the temporary folder.
    private static func temporaryTablePath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("identities-\(UUID().uuidString).sqlite").path
    }

    /// The table at `path`, with its WAL and shared-memory files.
    private static func removeTable(at path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test func aPathKeepsItsNumberAndANewOneGetsANewNumber() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("Harbour Tower", collection: true), in: IdentityTable.root)
        let first = try table.nodes(for: [sighting("a.txt"), sighting("b.txt")], in: site).map(\.node)
        let again = try table.nodes(for: [sighting("b.txt"), sighting("a.txt")], in: site).map(\.node)
        #expect(again == [first[1], first[0]])
        let location = try #require(try table.location(of: first[0]))
        #expect(location.components == ["Harbour Tower", "a.txt"] && location.site == site && location.parent == site)
        #expect(!location.isCollection)
        #expect(try table.location(of: site)?.isCollection == true)
    }

    /// A new file's node and the upload time the server did not store are one commit: the
    /// sighting of what the PUT made carries the time, kept for that version only.
    @Test func aSightingKeepsTheTimeItCarriesForItsVersion() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let made = try table.nodes(for: [.init(name: "new.txt", isCollection: false, version: "v1", keepModified: 1_234_567)],
                                   in: site)[0]
        #expect(made.keptModified == 1_234_567)
        #expect(try table.keptModified(of: made.node, version: "v1") == 1_234_567)
        let listed = try table.nodes(for: [.init(name: "new.txt", isCollection: false, version: "v1")], in: site)[0]
        #expect(listed == made)
        let changed = try table.nodes(for: [.init(name: "new.txt", isCollection: false, version: "v2")], in: site)[0]
        #expect(changed.node == made.node && changed.keptModified == nil)
    }

    /// A first listing adds its entries without looking them up first; what is there already
    /// (a name listed twice, a file made meanwhile, an item with the server's file id) still
    /// gets the number the table has for it.
    @Test func aFirstListingGetsTheNumbersALookupWould() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        #expect(try !table.hasChildren(site))
        let before = try table.nodes(for: [sighting("made meanwhile.txt")], in: site)[0].node
        #expect(try table.hasChildren(site))
        let fileIDs = try table.nodes(for: [sighting("moved.txt", fileID: "f-1")], in: IdentityTable.root)[0].node
        let listed = try table.nodes(for: [sighting("a.txt"), sighting("made meanwhile.txt"), sighting("a.txt"),
                                           sighting("Plans", collection: true), sighting("moved here.txt", fileID: "f-1")],
                                     in: site, likelyNew: true).map(\.node)
        #expect(listed[1] == before && listed[2] == listed[0] && listed[4] == fileIDs)
        #expect(Set(listed).count == 4)
        let again = try table.nodes(for: [sighting("a.txt"), sighting("made meanwhile.txt"), sighting("Plans", collection: true),
                                          sighting("moved here.txt", fileID: "f-1")], in: site).map(\.node)
        #expect(again == [listed[0], listed[1], listed[3], listed[4]])
        #expect(try table.location(of: listed[3])?.isCollection == true)
        #expect(try table.location(of: fileIDs)?.components == ["S", "moved here.txt"])
    }

    @Test func namesAreComparedAsBytes() throws {
        let table = try IdentityTable(path: nil)
        let composed = try table.node(for: sighting("caf\u{e9}"), in: IdentityTable.root)
        let decomposed = try table.node(for: sighting("cafe\u{301}"), in: IdentityTable.root)
        #expect(composed != decomposed)
        // A first listing binds each name's bytes as they are, too.
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let listed = try table.nodes(for: [sighting("caf\u{e9}"), sighting("cafe\u{301}")], in: site, likelyNew: true).map(\.node)
        #expect(listed[0] != listed[1])
        #expect(try table.existingNode(named: "cafe\u{301}", in: site) == listed[1])
        #expect(try table.location(of: listed[0])?.components.last.map { Array($0.utf8) } == Array("caf\u{e9}".utf8))
    }

    @Test func aMovedFolderTakesItsSubtreeAlong() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let folder = try table.node(for: sighting("Plans", collection: true), in: site)
        let file = try table.node(for: sighting("deep.txt"), in: folder)
        let other = try table.node(for: sighting("Archive", collection: true), in: site)
        try table.move(folder, to: other, name: "Old plans")
        #expect(try table.location(of: file)?.components == ["S", "Archive", "Old plans", "deep.txt"])
        #expect(try table.existingNode(named: "Plans", in: site) == nil)
    }

    @Test func aMoveOverAnExistingNameReplacesItAndARemovedSubtreeIsForgotten() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let old = try table.node(for: sighting("doc.odt"), in: site)
        let temp = try table.node(for: sighting(".~tmp"), in: site)
        try table.move(temp, to: site, name: "doc.odt")
        #expect(try table.location(of: old) == nil)
        #expect(try table.location(of: temp)?.components == ["S", "doc.odt"])
        let folder = try table.node(for: sighting("F", collection: true), in: site)
        let inside = try table.node(for: sighting("x"), in: folder)
        try table.remove(folder)
        #expect(try table.location(of: inside) == nil)
        // Numbers are never reused: a cached number of a deleted item cannot come to mean another.
        let fresh = try table.node(for: sighting("F", collection: true), in: site)
        #expect(fresh > inside)
    }

    /// A chain of parents that never reaches the root (a folder moved into its own subtree,
    /// which no server does) is no location, and the walk up it ends.
    @Test func aChainOfParentsThatLoopsIsNoLocation() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let outer = try table.node(for: sighting("A", collection: true), in: site)
        let inner = try table.node(for: sighting("B", collection: true), in: outer)
        let file = try table.node(for: sighting("f.txt"), in: inner)
        #expect(try table.location(of: file)?.components == ["S", "A", "B", "f.txt"])
        try table.move(outer, to: inner, name: "A")
        #expect(try table.location(of: file) == nil)
        #expect(try table.location(of: outer) == nil)
        #expect(try table.location(of: site)?.components == ["S"])
    }

    @Test func pruningForgetsChildrenAListingNoLongerReports() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let nodes = try table.nodes(for: [sighting("keep"), sighting("gone")], in: site).map(\.node)
        let mark = table.beginListing()
        try table.prune(childrenOf: site, keeping: [nodes[0]], listedSince: mark)
        table.endListing(mark)
        #expect(try table.location(of: nodes[0]) != nil)
        #expect(try table.location(of: nodes[1]) == nil)
    }

    /// A listing's PROPFIND answered before this mount made a folder (`git clone` making
    /// `.git/objects/xx`) or moved a file in does not report them; its prune keeps them, and
    /// what was there before the listing began and is not reported goes.
    @Test func aListingKeepsWhatThisMountPlacedWhileItWasUnderWay() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let other = try table.node(for: sighting("Other", collection: true), in: site)
        var before = try table.nodes(for: [sighting("listed"), sighting("deleted there")], in: other).map(\.node)
        before.append(try table.node(for: sighting("elsewhere.txt"), in: site))
        let mark = table.beginListing()
        let listed = try table.nodes(for: [sighting("listed")], in: other, listed: true)[0].node
        #expect(listed == before[0])
        let made = try table.node(for: sighting("objects", collection: true), in: other)
        let below = try table.node(for: sighting("21", collection: true), in: made)
        let put = try table.nodes(for: [sighting("new.txt")], in: other)[0].node
        let later = table.beginListing()  // a second listing, begun after those
        try table.move(before[2], to: other, name: "moved in")
        try table.prune(childrenOf: other, keeping: [listed], listedSince: mark)
        table.endListing(mark)
        for node in [listed, made, below, put, before[2]] { #expect(try table.location(of: node) != nil) }
        #expect(try table.location(of: before[1]) == nil)
        // The later listing reports what was made before it began: what it does not report goes.
        try table.prune(childrenOf: other, keeping: [listed, made, before[2]], listedSince: later)
        table.endListing(later)
        #expect(try table.location(of: put) == nil && table.location(of: made) != nil && table.location(of: below) != nil)
        #expect(try table.location(of: before[2])?.components == ["S", "Other", "moved in"])
    }

    @Test func theServersFileIDFollowsARenameMadeOnTheServer() throws {
        let table = try IdentityTable(path: nil)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let original = try table.node(for: sighting("report.docx", fileID: "117"), in: site)
        // Seen again under another name, with the same file id: the same item.
        let renamed = try table.node(for: sighting("report final.docx", fileID: "117"), in: site)
        #expect(renamed == original)
        #expect(try table.location(of: original)?.components == ["S", "report final.docx"])
        // Another file id at a known name: another item.
        let replaced = try table.node(for: sighting("report final.docx", fileID: "118"), in: site)
        #expect(replaced != original)
        #expect(try table.location(of: original) == nil)
    }

    /// A created file's node does not wait for the disk; anything that waits for it flushes
    /// it (a durable write of the table, `makeDurable` naming it), and the connection is back
    /// to synchronous=FULL after each deferred commit. At most `deferredLimit` wait.
    @Test func aCreatedFilesNodeWaitsForTheDiskUntilAFlushedCommit() throws {
        let path = Self.temporaryTablePath()
        defer { Self.removeTable(at: path) }
        let table = try IdentityTable(path: path)
        let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
        let created = try table.nodesOfCreatedFiles([sighting("new.txt")], in: site)[0].node
        #expect(table.nodesWaitingForTheDisk == [created])
        #expect(try table.synchronousSetting() == 2)
        // Seen again (a listing that changes nothing): still waiting.
        #expect(try table.nodes(for: [sighting("new.txt")], in: site).map(\.node) == [created])
        #expect(table.nodesWaitingForTheDisk == [created])
        try table.makeDurable([site])
        #expect(table.nodesWaitingForTheDisk == [created])
        try table.makeDurable([site, created])
        #expect(table.nodesWaitingForTheDisk.isEmpty)
        // A durable commit that changes a row flushes whatever waited before it.
        let second = try table.nodesOfCreatedFiles([sighting("second.txt")], in: site)[0].node
        #expect(table.nodesWaitingForTheDisk == [second])
        _ = try table.node(for: sighting("Folder", collection: true), in: site)
        #expect(table.nodesWaitingForTheDisk.isEmpty)
        var made: [IdentityTable.Node] = []
        for index in 0...IdentityTable.deferredLimit {
            made += try table.nodesOfCreatedFiles([sighting("many \(index).txt")], in: site).map(\.node)
        }
        // The one past the limit waited for the disk, and flushed the others with it.
        #expect(made.count == IdentityTable.deferredLimit + 1)
        #expect(table.nodesWaitingForTheDisk.isEmpty)
        #expect(try table.synchronousSetting() == 2)
    }

    /// Numbers a power cut could have taken back (deferred commits) are never handed out
    /// again: each open moves the numbering on past more than can wait for the disk.
    @Test func anOpenSkipsTheNumbersAPowerCutCouldHaveTakenBack() throws {
        let path = Self.temporaryTablePath()
        defer { Self.removeTable(at: path) }
        var last: IdentityTable.Node = 0
        do {
            let table = try IdentityTable(path: path)
            let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
            last = try table.nodesOfCreatedFiles([sighting("a.txt")], in: site)[0].node
        }
        let reopened = try IdentityTable(path: path)
        let site = try #require(try reopened.existingNode(named: "S", in: IdentityTable.root))
        #expect(try reopened.existingNode(named: "a.txt", in: site) == last)
        let next = try reopened.node(for: sighting("b.txt"), in: site)
        #expect(next > last + IdentityTable.skippedAtOpen - 1)
        #expect(IdentityTable.skippedAtOpen > Int64(IdentityTable.deferredLimit))
    }

    @Test func numbersAndKeptTimesSurviveReopening() throws {
        let path = Self.temporaryTablePath()
        defer { Self.removeTable(at: path) }
        var node: IdentityTable.Node = 0
        do {
            let table = try IdentityTable(path: path)
            let site = try table.node(for: sighting("S", collection: true), in: IdentityTable.root)
            node = try table.node(for: sighting("a.txt"), in: site)
            try table.keep(modified: 1_234_000_000, of: node, version: "v1")
        }
        let reopened = try IdentityTable(path: path)
        #expect(try reopened.location(of: node)?.components == ["S", "a.txt"])
        #expect(try reopened.keptModified(of: node, version: "v1") == 1_234_000_000)
        // Kept only while the server still has that version.
        #expect(try reopened.keptModified(of: node, version: "v2") == nil)
        let site = try #require(try reopened.existingNode(named: "S", in: IdentityTable.root))
        let resolved = try reopened.nodes(for: [.init(name: "a.txt", isCollection: false, version: "v1")], in: site)
        #expect(resolved == [.init(node: node, keptModified: 1_234_000_000)])
    }
}
