import SitefsProvider
import Testing
@testable import SitefsCore

@Suite struct InodeTableTests {
    @Test func numbersAreStableAndNeverReused() {
        let table = InodeTable()
        let a = ItemIdentifier(site: "1", id: "10"), b = ItemIdentifier(site: "2", id: "10")
        let inodeA = table.inode(for: a)
        let inodeB = table.inode(for: b)
        #expect(inodeA != inodeB && inodeA > InodeNumber.root)  // same id in two sites: two items
        #expect(table.inode(for: a) == inodeA)
        table.countLookup(inodeA)
        table.forget(inodeA, lookups: 1)
        #expect(table.lookupCount(inodeA) == 0)
        #expect(table.inode(for: a) == inodeA)  // forgotten by the kernel, same number for the mount's life
        #expect(table.identifier(of: inodeA) == a)
        #expect(table.identifier(of: 9999) == nil)
    }

    @Test func lookupCountsFollowTheKernel() {
        let table = InodeTable()
        let inode = table.inode(for: ItemIdentifier(site: "1", id: "2"))
        for _ in 0..<5 { table.countLookup(inode) }
        table.forget(inode, lookups: 3)
        #expect(table.lookupCount(inode) == 2)
        // Forgetting more than was counted is a bug that stops debug builds (asserted);
        // forgetting the rest ends the count.
        table.forget(inode, lookups: 2)
        #expect(table.lookupCount(inode) == 0)
        table.countLookup(.root)
        #expect(table.lookupCount(.root) == 0)  // the root is never counted or forgotten
    }

    @Test func rebindMovesAnInodeToTheSurvivingItem() {
        let table = InodeTable()
        let temp = ItemIdentifier(site: "1", id: "20"), original = ItemIdentifier(site: "1", id: "5")
        let tempInode = table.inode(for: temp)
        let originalInode = table.inode(for: original)
        table.rebind(tempInode, to: original)
        #expect(table.identifier(of: tempInode) == original)
        #expect(table.existingInode(for: original) == tempInode)
        #expect(table.identifier(of: originalInode) == nil)  // the replaced file's old inode is stale
        // The retired identifier leads to the inode that lives on (a lookup racing the change).
        #expect(table.existingInode(for: temp) == tempInode)
    }

    @Test func numbersComeInSequenceAndOnlyThoseHandedOutResolve() {
        let table = InodeTable()
        let identifiers = (0..<1000).map { ItemIdentifier(site: "s", id: "\($0)") }
        let inodes = identifiers.map(table.inode(for:))
        #expect(inodes == (0..<1000).map { InodeNumber.root + 1 + InodeNumber($0) })
        #expect(zip(inodes, identifiers).allSatisfy { table.identifier(of: $0) == $1 })
        #expect(table.count == 1000)
        for number: InodeNumber in [0, .root, InodeNumber.root + 1001, .max] { #expect(table.identifier(of: number) == nil) }
        // A rebind of a number never handed out binds nothing (and traps nothing).
        table.rebind(.max, to: identifiers[0])
        #expect(table.existingInode(for: identifiers[0]) == inodes[0] && table.identifier(of: .max) == nil)
        table.rebind(inodes[1], to: identifiers[2])
        #expect(table.count == 999 && table.identifier(of: inodes[2]) == nil && table.identifier(of: inodes[1]) == identifiers[2])
        #expect(table.inode(for: ItemIdentifier(site: "s", id: "new")) == InodeNumber.root + 1001)  // never reused
    }
}
