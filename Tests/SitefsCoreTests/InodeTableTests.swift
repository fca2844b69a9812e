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
}
