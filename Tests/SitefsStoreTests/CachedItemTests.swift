import SitefsAPI
import SitefsProvider
import Testing
@testable import SitefsStore

/// The item cache's compact form gives back the item it was given, byte for byte, and the
/// items of one folder share what they have in common.
@Suite struct CachedItemTests {
    private let now = ContinuousClock.now

    private func variants() -> [ProviderItem] {
        let time = Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000)
        var locked = Tree.item("2", "locked.odt")
        locked.lock = ProviderLock(holder: "u-7", holderName: "Anna", device: "laptop", application: "LibreOffice",
                                   since: time, expires: nil, heldHere: true)
        var link = Tree.item("3", "plans-link", kind: .symlink)
        link.symlinkTarget = Array("../Plans".utf8)
        var moded = Tree.item("4", "run.sh")
        moded.mode = 0o750
        var otherAuthor = Tree.item("5", "by someone else.txt")
        otherAuthor.modifiedBy = "someone else entirely"
        let decomposed = Tree.item("6", "cafe\u{301}.txt", in: ItemIdentifier(site: "1", id: "cafe\u{301}"))
        let composed = Tree.item("7", "caf\u{E9}.txt", in: ItemIdentifier(site: "1", id: "caf\u{E9}"))
        return [Tree.item("1", "a.txt"), locked, link, moded, otherAuthor, decomposed, composed, Tree.site.siteItem,
                Tree.item("8", "Drawings", kind: .folder)]
    }

    @Test func anItemComesBackAsItWasStored() {
        var context: CachedItem.Context?
        for item in variants() {
            let cached = CachedItem(item, fetchedAt: now, sharing: context)
            context = cached.context
            #expect(cached.item == item, "\(item.name)")
            #expect(cached.identifier == item.identifier)
            let parentBytes: [UInt8]? = cached.item.parent.map { Array($0.id.utf8) }
            #expect(parentBytes == item.parent.map { Array($0.id.utf8) }, "the parent's bytes as given")
            #expect(CachedItem(cached, fetchedAt: now + .seconds(1)).item == item)
        }
    }

    @Test func itemsOfOneFolderShareTheirContextAndOthersDoNot() {
        let a = CachedItem(Tree.item("1", "a"), fetchedAt: now, sharing: nil)
        let b = CachedItem(Tree.item("2", "b"), fetchedAt: now, sharing: a.context)
        #expect(a.context === b.context)
        let elsewhere = CachedItem(Tree.item("3", "c", in: Tree.drawings), fetchedAt: now, sharing: b.context)
        #expect(elsewhere.context !== b.context && elsewhere.item.parent == Tree.drawings)
        // NFC and NFD folder ids are two folders: an item of one never takes the other's.
        let nfd = CachedItem(Tree.item("4", "d", in: ItemIdentifier(site: "1", id: "cafe\u{301}")), fetchedAt: now, sharing: nil)
        let nfc = CachedItem(Tree.item("5", "e", in: ItemIdentifier(site: "1", id: "caf\u{E9}")), fetchedAt: now, sharing: nfd.context)
        #expect(nfc.context !== nfd.context)
        #expect(Array(nfc.item.parent!.id.utf8) == Array("caf\u{E9}".utf8))
    }
}

private extension ItemIdentifier {
    /// A site as the server lists it: no parent.
    var siteItem: ProviderItem {
        var item = Tree.item(id, "Site \(id)", in: nil, kind: .site)
        item.identifier = self
        return item
    }
}
