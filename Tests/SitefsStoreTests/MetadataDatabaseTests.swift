import Logging
import SitefsProvider
import SitefsStore
import Testing

/// The metadata cache on disk: what is written comes back at the next open, in order, and
/// the clean-shutdown mark says only whether the last run ended cleanly.
@Suite struct MetadataDatabaseTests {
    private let logger = Logger(label: "sitefs.store-tests")

    private func open(_ scratch: ScratchFolder) throws -> MetadataDatabase {
        try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger)
    }

    @Test func itemsAndListingsComeBackAtTheNextOpen() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let site = Tree.item("1", "Harbour Tower", in: nil, kind: .site)
        let plans = Tree.item("10", "Plans", in: Tree.site, kind: .folder)
        let a = Tree.item("1a", "a.txt"), b = Tree.item("1b", "b.txt")
        let empty = Tree.item("11", "Empty", in: Tree.site, kind: .folder)
        do {
            let database = try open(scratch)
            database.save([site, plans, a, b, empty])
            database.saveListing(ItemCache.Listing(names: ["Harbour Tower"], identifiers: [Tree.site]), of: ItemCache.root)
            database.saveListing(ItemCache.Listing(names: ["b.txt", "a.txt"], identifiers: [b.identifier, a.identifier]), of: Tree.plans)
            database.saveListing(ItemCache.Listing(names: [], identifiers: []), of: empty.identifier)
            database.setValue("cursor-42", for: "changes")
            database.flush()
        }
        let database = try open(scratch)
        let items = Dictionary(uniqueKeysWithValues: database.loadItems().map { ($0.identifier, $0) })
        #expect(items.count == 5)
        #expect(items[a.identifier] == a && items[site.identifier] == site && items[plans.identifier] == plans)
        let listings = database.loadListings()
        #expect(listings[Tree.plans]?.names == ["b.txt", "a.txt"], "in the server's order")
        #expect(listings[Tree.plans]?.identifiers == [b.identifier, a.identifier])
        #expect(listings[ItemCache.root]?.identifiers == [Tree.site], "a site's identifier is (id, id)")
        #expect(listings[empty.identifier]?.names == [], "an empty folder's listing is known too")
        #expect(database.value(for: "changes") == "cursor-42")
        #expect(database.value(for: "nothing") == nil)
    }

    @Test func entryChangesApplyInTheOrderTheyWereMade() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let a = Tree.item("1a", "a.txt"), b = Tree.item("1b", "b.txt"), c = Tree.item("1c", "c.txt")
        do {
            let database = try open(scratch)
            database.saveListing(ItemCache.Listing(names: ["a.txt", "b.txt"], identifiers: [a.identifier, b.identifier]), of: Tree.plans)
            database.appendEntry(c.identifier, named: "c.txt", to: Tree.plans)
            database.renameEntry(a.identifier, to: "a2.txt", in: Tree.plans)
            database.removeEntry(b.identifier, from: Tree.plans)
            database.saveListing(ItemCache.Listing(names: ["x"], identifiers: [ItemIdentifier(site: "1", id: "x")]), of: Tree.drawings)
            database.forgetListing(of: Tree.drawings)
            database.flush()
        }
        let listings = try open(scratch).loadListings()
        #expect(listings[Tree.plans]?.names == ["a2.txt", "c.txt"])
        #expect(listings[Tree.plans]?.identifiers == [a.identifier, c.identifier])
        #expect(listings[Tree.drawings] == nil)
    }

    @Test func aRemovedItemTakesItsListingWithIt() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let folder = Tree.item("20", "Old", kind: .folder), inside = Tree.item("21", "in.txt", in: ItemIdentifier(site: "1", id: "20"))
        do {
            let database = try open(scratch)
            database.save([folder, inside])
            database.saveListing(ItemCache.Listing(names: ["in.txt"], identifiers: [inside.identifier]), of: folder.identifier)
            database.remove(folder.identifier)
            database.flush()
        }
        let database = try open(scratch)
        #expect(database.loadItems().map(\.identifier) == [inside.identifier])
        #expect(database.loadListings()[folder.identifier] == nil)
    }

    @Test func theCleanShutdownMarkCountsForTheNextOpenOnly() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        #expect(try !open(scratch).lastRunEndedCleanly, "a new cache")
        do {
            let database = try open(scratch)
            database.save([Tree.item("1a", "a.txt")])
            database.markCleanShutdown()
        }
        #expect(try open(scratch).lastRunEndedCleanly)
        // That open took the mark away: a run killed after it leaves none.
        #expect(try !open(scratch).lastRunEndedCleanly)
    }

    /// Every field of an item comes back byte for byte: the values are bound to SQLite one
    /// by one (`BulkInsert`), empty, non-ASCII and absent ones included.
    @Test func everyFieldOfAnItemComesBackAsItWas() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        var link = Tree.item("1l", "Pl\u{61}\u{301}ns \u{2192} current")
        link.kind = .symlink
        link.symlinkTarget = Array("../Pl\u{e1}ns/\u{0}x".utf8).filter { $0 != 0 }
        link.mode = 0o640
        link.version = ""
        link.createdBy = ""
        link.modifiedBy = "Zoë"
        link.size = Int64.max
        var empty = Tree.item("1e", "e")
        empty.symlinkTarget = nil
        empty.mode = nil
        do {
            let database = try open(scratch)
            database.save([link, empty])
            database.saveListing(ItemCache.Listing(names: [link.name, ""], identifiers: [link.identifier, empty.identifier]),
                                 of: Tree.plans)
            database.flush()
        }
        let database = try open(scratch)
        let items = Dictionary(uniqueKeysWithValues: database.loadItems().map { ($0.identifier, $0) })
        #expect(items[link.identifier] == link)
        #expect(items[link.identifier]?.name.utf8.elementsEqual(link.name.utf8) == true, "the name's bytes, not an equivalent")
        #expect(items[empty.identifier] == empty)
        #expect(database.loadListings()[Tree.plans]?.names.map { Array($0.utf8) } == [Array(link.name.utf8), []])
    }

    @Test func aWriteAfterTheMarkMakesItUntrue() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let database = try open(scratch)
        database.markCleanShutdown()
        database.save([Tree.item("1a", "a.txt")])
        database.flush()
        #expect(try !open(scratch).lastRunEndedCleanly)
    }
}
