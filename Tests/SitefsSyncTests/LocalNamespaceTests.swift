import SitefsAPI
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Testing

/// Files made here, found by folder and name through the namespace's index: what holds is
/// that every question gives what a pass over all of them would.
@Suite struct LocalNamespaceTests {
    private let site = "Harbour"
    private var root: ItemIdentifier { .site(site) }

    private func made(_ name: String, in parent: ItemIdentifier) -> ProviderItem {
        InMemoryBackend.item(.local(in: site), parent: parent, name: name, kind: .file, readOnly: false)
    }

    @Test func filesMadeHereAreFoundByFolderAndNameAsBytes() {
        let namespace = LocalNamespace()
        let folder = ItemIdentifier(site: site, id: "drawings")
        let nfc = made("caf\u{E9}.txt", in: root)
        let other = made("plan.txt", in: folder)
        namespace.addCreated(nfc)
        namespace.addCreated(other)
        #expect(namespace.created(named: "caf\u{E9}.txt", in: root)?.identifier == nfc.identifier)
        #expect(namespace.created(named: "cafe\u{301}.txt", in: root) == nil, "an NFD name found the NFC file")
        #expect(namespace.created(named: "plan.txt", in: root) == nil)
        #expect(namespace.touches(folder) && namespace.touches(root))
        #expect(!namespace.touches(ItemIdentifier(site: site, id: "elsewhere")))

        // Renamed before its upload: found under its new name only.
        var renamed = nfc
        renamed.name = "menu.txt"
        namespace.addCreated(renamed)
        #expect(namespace.created(named: "caf\u{E9}.txt", in: root) == nil)
        #expect(namespace.created(named: "menu.txt", in: root)?.identifier == nfc.identifier)
        let (names, identifiers) = namespace.complete(names: ["server.txt"], identifiers: [ItemIdentifier(site: site, id: "s1")],
                                                      of: root)
        #expect(names == ["server.txt", "menu.txt"] && identifiers.last == nfc.identifier)

        // Gone: nothing of it is left to find.
        namespace.removeCreated(renamed.identifier)
        #expect(namespace.created(named: "menu.txt", in: root) == nil)
        #expect(!namespace.touches(root))
    }

    @Test func aFolderMadeOnTheServerTakesWhatWasMadeInIt() {
        let namespace = LocalNamespace()
        let local = ItemIdentifier.local(in: site)
        let inside = made("notes.txt", in: local)
        namespace.addCreated(inside)
        let server = ItemIdentifier(site: site, id: "made")
        namespace.reparent(from: local, to: server)
        #expect(namespace.created(named: "notes.txt", in: local) == nil)
        #expect(namespace.created(named: "notes.txt", in: server)?.parent == server)
        #expect(!namespace.touches(local) && namespace.touches(server))
    }

    @Test func ofTwoWithOneNameTheLaterIsShownAndTheEarlierGoingLeavesIt() {
        let namespace = LocalNamespace()
        let first = made("a.txt", in: root)
        let second = made("a.txt", in: root)
        namespace.addCreated(first)
        namespace.addCreated(second)
        namespace.removeCreated(first.identifier)
        #expect(namespace.created(named: "a.txt", in: root)?.identifier == second.identifier)
        #expect(namespace.touches(root))
    }
}
