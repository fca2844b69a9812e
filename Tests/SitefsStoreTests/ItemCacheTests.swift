import Logging
import SitefsProvider
import SitefsStore
import Testing

/// What the mount knows of the server's tree: listings kept current by the mount's own
/// operations, so `ls` after `mv`, `rm` or a new file shows them without asking the server.
@Suite struct ItemCacheTests {
    private func cache(listing items: [ProviderItem], of folder: ItemIdentifier = Tree.plans) -> ItemCache {
        let cache = ItemCache(maxAge: .seconds(3600))
        cache.store(items)
        cache.storeListing(ItemCache.Listing(names: items.map(\.name), identifiers: items.map(\.identifier)), of: folder)
        return cache
    }

    @Test func aNewItemJoinsItsParentsListingAtTheEnd() {
        let a = Tree.item("1", "a.txt"), b = Tree.item("2", "b.txt")
        let cache = cache(listing: [b, a])
        let c = Tree.item("3", "c.txt")
        #expect(cache.upsert(c) == nil, "a new item was listed nowhere before")
        #expect(cache.listing(of: Tree.plans)?.names == ["b.txt", "a.txt", "c.txt"])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "c.txt") == c.identifier)
        #expect(cache.item(c.identifier) == c)
        #expect(cache.itemCount == 3)
    }

    @Test func aRenameKeepsItsPlaceAndSaysWhereItWas() throws {
        let a = Tree.item("1", "a.txt"), b = Tree.item("2", "b.txt")
        let cache = cache(listing: [a, b])
        var renamed = a
        renamed.name = "z.txt"
        let former = try #require(cache.upsert(renamed))
        #expect(former.parent == Tree.plans && former.name == "a.txt")
        #expect(cache.listing(of: Tree.plans)?.names == ["z.txt", "b.txt"])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "a.txt") == nil)
    }

    @Test func aNewVersionOfTheSameNameIsNoEntryChange() {
        let a = Tree.item("1", "a.txt")
        let cache = cache(listing: [a])
        var saved = a
        saved.size = 99
        saved.version = "v2"
        #expect(cache.upsert(saved) == nil)
        #expect(cache.item(a.identifier)?.size == 99)
        #expect(cache.listing(of: Tree.plans)?.names == ["a.txt"])
    }

    @Test func namesAreFoundByTheirBytesNotByCanonicalEquivalence() {
        // "café" composed and decomposed are two documents on the server (`ItemName.same`).
        let composed = Tree.item("1", "caf\u{E9}.txt"), decomposed = Tree.item("2", "cafe\u{301}.txt")
        let cache = cache(listing: [composed, decomposed])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "caf\u{E9}.txt") == composed.identifier)
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "cafe\u{301}.txt") == decomposed.identifier)
        var renamed = decomposed
        renamed.name = "other.txt"
        cache.upsert(renamed)
        #expect(cache.listing(of: Tree.plans)?.names.map { Array($0.utf8) } == [Array("caf\u{E9}.txt".utf8), Array("other.txt".utf8)])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "caf\u{E9}.txt") == composed.identifier)
    }

    @Test func aMoveLeavesTheOldListingAndJoinsTheNewOne() throws {
        let a = Tree.item("1", "a.txt"), b = Tree.item("2", "b.txt"), d = Tree.item("3", "d.txt", in: Tree.drawings)
        let cache = cache(listing: [a, b])
        cache.store([d])
        cache.storeListing(ItemCache.Listing(names: ["d.txt"], identifiers: [d.identifier]), of: Tree.drawings)
        var moved = a
        moved.parent = Tree.drawings
        let former = try #require(cache.upsert(moved))
        #expect(former.parent == Tree.plans && former.name == "a.txt")
        #expect(cache.listing(of: Tree.plans)?.names == ["b.txt"])
        #expect(cache.listing(of: Tree.drawings)?.names == ["d.txt", "a.txt"])
    }

    @Test func aRemovedItemLeavesItsFolderAndTakesItsOwnListing() throws {
        let folder = Tree.item("20", "Old", kind: .folder), b = Tree.item("2", "b.txt")
        let cache = cache(listing: [folder, b])
        let inside = Tree.item("21", "inside.txt", in: folder.identifier)
        cache.store([inside])
        cache.storeListing(ItemCache.Listing(names: ["inside.txt"], identifiers: [inside.identifier]), of: folder.identifier)
        let former = try #require(cache.remove(folder.identifier))
        #expect(former.parent == Tree.plans && former.name == "Old")
        #expect(cache.item(folder.identifier) == nil)
        #expect(cache.listing(of: folder.identifier) == nil)
        #expect(cache.listing(of: Tree.plans)?.names == ["b.txt"])
        #expect(cache.remove(folder.identifier) == nil, "removed twice")
    }

    /// The soak's "pinned files not readable offline": a file made offline was listed (the
    /// engine's view adds what was made here) after a forgotten listing took its metadata;
    /// when its create reached the server, the core dropped it, and the stale entry before
    /// the server's file of the same name answered that name with ENOENT.
    @Test func somethingMadeHereListedButNotCachedLeavesEveryListingWhenRemoved() {
        let a = Tree.item("1", "a.txt")
        let cache = cache(listing: [a])
        let local = ItemIdentifier.local(in: Tree.plans.site)
        cache.storeListing(ItemCache.Listing(names: ["a.txt", "new.txt"], identifiers: [a.identifier, local]), of: Tree.plans)
        #expect(cache.item(local) == nil)
        let created = Tree.item("5", "new.txt")
        cache.upsert(created)
        cache.remove(local)
        #expect(cache.listing(of: Tree.plans)?.names == ["a.txt", "new.txt"])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "new.txt") == created.identifier)
    }

    @Test func aForgottenListingTakesItsItemsFreshnessWithIt() {
        let a = Tree.item("1", "a.txt")
        let cache = cache(listing: [a])
        cache.forgetListing(of: Tree.plans)
        #expect(cache.listing(of: Tree.plans) == nil, "a forgotten listing is asked of the server again")
        #expect(cache.item(a.identifier, notOlderThan: cache.maxAge) == nil, "and so are its items")
        // Kept as they were for while the server cannot be reached.
        #expect(cache.listing(of: Tree.plans, ignoringAge: true)?.names == ["a.txt"])
        #expect(cache.item(a.identifier) == a)
    }

    @Test func aListingFetchGetsWhatChangedInTheFolderWhileItsPagesCame() {
        let a = Tree.item("1", "a.txt"), b = Tree.item("2", "b.txt")
        let cache = cache(listing: [a, b])
        let fetch = cache.beginListing(of: Tree.plans)
        // Meanwhile here: a renamed, b deleted, c created.
        var renamed = a
        renamed.name = "a2.txt"
        cache.upsert(renamed)
        cache.remove(b.identifier)
        let c = Tree.item("3", "c.txt")
        cache.upsert(c)
        // The server's pages, from before all that.
        let stored = cache.storeListing(ItemCache.Listing(names: ["a.txt", "b.txt"], identifiers: [a.identifier, b.identifier]),
                                        fetch: fetch)
        #expect(stored.names == ["a2.txt", "c.txt"])
        #expect(cache.listing(of: Tree.plans)?.names == ["a2.txt", "c.txt"])
        #expect(cache.rememberedChanges == 0)
    }

    /// A listing fetched while a new file's upload ended: the server answered before the
    /// create, and the engine no longer lists the file once it is created, but the core has
    /// not replaced it yet. The file stays listed under its local identifier until it does.
    @Test func aFileMadeHereStaysListedWhileItsCreateEndsDuringAFetch() {
        let a = Tree.item("1", "a.txt")
        let cache = cache(listing: [a])
        let local = ItemIdentifier.local(in: Tree.plans.site)
        var made = Tree.item("x", "Makefile")
        made.identifier = local
        cache.upsert(made)
        let fetch = cache.beginListing(of: Tree.plans)
        let stored = cache.storeListing(ItemCache.Listing(names: ["a.txt"], identifiers: [a.identifier]), fetch: fetch)
        #expect(stored.names == ["a.txt", "Makefile"])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "Makefile") == local)
        // The core replaces it with the server's item.
        let created = Tree.item("5", "Makefile")
        cache.upsert(created)
        cache.remove(local)
        #expect(cache.listing(of: Tree.plans)?.names == ["a.txt", "Makefile"])
        #expect(cache.listing(of: Tree.plans)?.identifier(named: "Makefile") == created.identifier)
        // Once replaced, a fetch from before the create no longer brings the local one back.
        let later = cache.beginListing(of: Tree.plans)
        let again = cache.storeListing(ItemCache.Listing(names: ["a.txt"], identifiers: [a.identifier]), fetch: later)
        #expect(!again.identifiers.contains(local))
    }

    /// The same in a folder never listed before (one made here, whose own create just
    /// ended): the cache lists what it holds made here in it, not only what an earlier
    /// listing showed. `git fsck` found a tree `git clone` had copied into such a folder
    /// "missing".
    @Test func aFileMadeHereStaysListedInAFolderNotListedBefore() {
        let cache = ItemCache(maxAge: .seconds(3600))
        let local = ItemIdentifier.local(in: Tree.plans.site)
        var made = Tree.item("x", "9b5fea")
        made.identifier = local
        cache.upsert(made)
        #expect(cache.listing(of: Tree.plans) == nil)
        let fetch = cache.beginListing(of: Tree.plans)
        let stored = cache.storeListing(ItemCache.Listing(names: [], identifiers: []), fetch: fetch)
        #expect(stored.identifiers == [local])
        // Replaced in one step: the server's item in its place, the local one in no listing
        // fetched later.
        let created = Tree.item("5", "9b5fea")
        #expect(cache.replace(local, with: created)?.name == "9b5fea")
        #expect(cache.listing(of: Tree.plans)?.identifiers == [created.identifier])
        #expect(cache.item(local) == nil)
        let later = cache.beginListing(of: Tree.plans)
        #expect(cache.storeListing(ItemCache.Listing(names: [], identifiers: []), fetch: later).identifiers.isEmpty)
        // A file made here and moved to another folder is listed there only.
        var moved = made
        moved.identifier = ItemIdentifier.local(in: Tree.plans.site)
        cache.upsert(moved)
        moved.parent = Tree.item("6", "elsewhere", kind: .folder).identifier
        cache.upsert(moved)
        let third = cache.beginListing(of: Tree.plans)
        #expect(cache.storeListing(ItemCache.Listing(names: [], identifiers: []), fetch: third).identifiers.isEmpty)
    }

    @Test func aListingFetchOverlappedByAForgetIsNotStored() {
        let a = Tree.item("1", "a.txt")
        let cache = cache(listing: [a])
        let fetch = cache.beginListing(of: Tree.plans)
        cache.forgetListing(of: Tree.plans)
        let fetched = ItemCache.Listing(names: ["a.txt"], identifiers: [a.identifier])
        #expect(cache.storeListing(fetched, fetch: fetch).names == ["a.txt"])
        #expect(cache.listing(of: Tree.plans) == nil, "an outcome unknown: the next lookup asks the server")
    }
}

/// The cache over its database: a remount starts warm, trusted only after a clean unmount.
@Suite struct WarmStartTests {
    private let logger = Logger(label: "sitefs.store-tests")

    @Test func whatAMountKnewIsFreshAfterACleanUnmountAndStaleAfterAKill() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let a = Tree.item("1", "a.txt"), b = Tree.item("2", "b.txt")
        do {
            let database = try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger)
            let cache = ItemCache(maxAge: .seconds(60), persistence: database)
            cache.store([a, b])
            cache.storeListing(ItemCache.Listing(names: ["a.txt", "b.txt"], identifiers: [a.identifier, b.identifier]), of: Tree.plans)
            database.markCleanShutdown()
        }
        do {
            // After a clean unmount: trusted as it is (the change feed brings it up to date).
            let database = try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger)
            let cache = ItemCache(maxAge: .seconds(60), persistence: database)
            #expect(cache.listing(of: Tree.plans)?.names == ["a.txt", "b.txt"])
            #expect(cache.item(b.identifier, notOlderThan: .seconds(60)) == b)
            database.flush()  // and this run is killed: no mark
        }
        // After a kill: known, but asked of the server before it is used.
        let database = try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger)
        let cache = ItemCache(maxAge: .seconds(60), persistence: database)
        #expect(cache.listing(of: Tree.plans) == nil)
        #expect(cache.listing(of: Tree.plans, ignoringAge: true)?.names == ["a.txt", "b.txt"], "kept for browsing offline")
        #expect(cache.item(a.identifier, notOlderThan: .seconds(60)) == nil)
        #expect(cache.item(a.identifier) == a)
    }

    @Test func itemsOnlyThisMountHasAreNotWrittenToTheCache() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let a = Tree.item("1", "a.txt"), local = Tree.item(ItemIdentifier.localPrefix + "7", "new.txt")
        do {
            let database = try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger)
            let cache = ItemCache(maxAge: .seconds(60), persistence: database)
            cache.store([a, local])
            cache.upsert(local)
            cache.storeListing(ItemCache.Listing(names: ["a.txt", "new.txt"], identifiers: [a.identifier, local.identifier]), of: Tree.plans)
            #expect(cache.listing(of: Tree.plans)?.names == ["a.txt", "new.txt"])
            database.markCleanShutdown()
        }
        // They come back from the upload journal, not from here.
        let cache = ItemCache(maxAge: .seconds(60), persistence: try MetadataDatabase(path: scratch.path("metadata.sqlite"), logger: logger))
        #expect(cache.item(local.identifier) == nil)
        #expect(cache.item(a.identifier) == a)
        #expect(cache.listing(of: Tree.plans)?.names == ["a.txt"])
    }
}
