import SitefsAPI
import SitefsProvider
import SitefsStore
import Testing

/// The rules behind `ServerRead`, on the cache alone.
@Suite struct ServerReadLedgerTests {
    private let plans = ItemIdentifier(site: "1", id: "10")

    private func file(_ id: String, _ name: String) -> ProviderItem {
        let time = Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000)
        return ProviderItem(identifier: ItemIdentifier(site: "1", id: id), parent: plans, name: name, kind: .file, size: 1,
                            created: time, modified: time, createdBy: "test", modifiedBy: "test", version: "v\(id)",
                            capabilities: [.read, .write, .rename, .delete])
    }

    private func cacheListing(_ items: [ProviderItem]) -> ItemCache {
        let cache = ItemCache(maxAge: .seconds(60))
        cache.store(items)
        cache.storeListing(ItemCache.Listing(names: items.map(\.name), identifiers: items.map(\.identifier)), of: plans)
        return cache
    }

    @Test func aReportFromBeforeARemovalIsStaleAndOneFromAfterIsNot() throws {
        let a = file("1", "a.txt"), b = file("2", "b.txt")
        let cache = cacheListing([a, b])
        let before = cache.beginRead()
        cache.remove(a.identifier)
        let after = cache.beginRead()
        guard case .stale = cache.upsert(a, asOf: before) else {
            Issue.record("a report asked for before the removal was stored")
            return
        }
        #expect(cache.listing(of: plans)?.names == ["b.txt"])
        // Asked for after the removal: the server has it again (a restored grant), so it counts.
        guard case .stored = cache.upsert(a, asOf: after) else {
            Issue.record("a report asked for after the removal was refused")
            return
        }
        #expect(cache.listing(of: plans)?.names == ["b.txt", "a.txt"])
        cache.endRead(before)
        cache.endRead(after)
        #expect(cache.rememberedChanges == 0, "nothing is kept once no read is pending")
    }

    @Test func pagesDoNotOverwriteWhatChangedAfterTheyWereAskedFor() {
        let a = file("1", "a.txt")
        let cache = cacheListing([a])
        let page = cache.beginRead()
        var renamed = a
        renamed.name = "a2.txt"
        cache.upsert(renamed)
        cache.store([a], asOf: page)
        cache.endRead(page)
        #expect(cache.item(a.identifier)?.name == "a2.txt")
        #expect(cache.listing(of: plans)?.names == ["a2.txt"])
    }

    @Test func anAnswerToOurOwnOperationIsStoredOnlyForAnItemStillKnown() {
        let a = file("1", "a.txt")
        let cache = cacheListing([a])
        var saved = a
        saved.size = 5
        #expect(cache.upsertIfKnown(saved))
        #expect(cache.item(a.identifier)?.size == 5)
        cache.remove(a.identifier)
        #expect(!cache.upsertIfKnown(saved))
        #expect(cache.item(a.identifier) == nil)
        #expect(cache.listing(of: plans)?.names == [])
    }

    @Test func changesNotedForOverlappingReadsArePrunedToTheOldestPendingOne() {
        let cache = ItemCache(maxAge: .seconds(60))
        let items = (0..<5000).map { file(String($0), "f\($0)") }
        let long = cache.beginRead()
        for item in items { cache.upsert(item) }
        let newer = cache.beginRead()
        for item in items.prefix(10) { cache.upsert(item) }
        #expect(cache.rememberedChanges == 5000)
        cache.endRead(long)  // the oldest read ends while a newer one is still pending
        #expect(cache.rememberedChanges == 10, "changes older than every pending read are dropped")
        guard case .stale = cache.upsert(items[0], asOf: newer) else {
            Issue.record("a change after the pending read began was pruned")
            return
        }
        guard case .stored = cache.upsert(items[20], asOf: newer) else {
            Issue.record("a change before the pending read began still counted")
            return
        }
        cache.endRead(newer)
        #expect(cache.rememberedChanges == 0)
    }
}
