import SitefsProvider
import Testing
@testable import SitefsStore

/// The hash index of the item cache and the inode table, checked against a dictionary: keys
/// found, moved and removed as the dictionary has them, also when many keys share a hash.
@Suite struct SlotIndexTests {
    /// Keys in slots, as an owner keeps them, with a hash that may be chosen badly.
    private struct Owner {
        var keys: [String?] = []
        var index = SlotIndex()
        let hash: (String) -> Int

        func slot(of key: String) -> Int? { index.slot(hash: hash(key)) { keys[$0] == key } }

        mutating func add(_ key: String) {
            index.insert(keys.count, hash: hash(key))
            keys.append(key)
        }

        mutating func remove(_ key: String) {
            guard let slot = slot(of: key) else { return }
            index.remove(slot, hash: hash(key))
            keys[slot] = nil
        }
    }

    @Test(arguments: [("a good hash", false), ("seven hashes for all keys", true)])
    func findsWhatADictionaryFinds(_ label: String, _ colliding: Bool) {
        var owner = Owner(hash: colliding ? { $0.utf8.reduce(0) { $0 &+ Int($1) } % 7 } : { $0.hashValue })
        var model: [String: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        for step in 0..<6000 {
            let key = "key-\(Int.random(in: 0..<1500, using: &generator))"
            if step % 3 == 2, model[key] != nil {
                owner.remove(key)
                model[key] = nil
            } else if model[key] == nil {
                model[key] = owner.keys.count
                owner.add(key)
            }
            if step % 500 == 0 || step == 5999 {
                for probe in 0..<1500 {
                    let key = "key-\(probe)"
                    #expect(owner.slot(of: key) == model[key], "\(label): \(key) after \(step) steps")
                }
                #expect(owner.index.count == model.count)
            }
        }
    }

    @Test func aRemovedEntryIsGoneAndItsKeyCanComeBack() {
        var owner = Owner(hash: { _ in 42 })  // every key in one probe chain
        for key in ["a", "b", "c"] { owner.add(key) }
        owner.remove("b")
        #expect(owner.slot(of: "b") == nil)
        #expect(owner.slot(of: "c") == 2, "a removal does not cut the chain after it")
        owner.add("b")
        #expect(owner.slot(of: "b") == 3)
        #expect(owner.index.count == 3)
    }

    @Test func manyInsertionsAndRemovalsNeverFillTheTable() {
        // Removal markers are dropped when the table is rebuilt, so a probe for a missing key
        // always ends (it would loop over a table of nothing but markers).
        var owner = Owner(hash: { $0.hashValue })
        for round in 0..<200 {
            let key = "k\(round)"
            owner.add(key)
            owner.remove(key)
        }
        #expect(owner.index.count == 0)
        #expect(owner.slot(of: "missing") == nil)
    }

    @Test func aSlottedTableReusesTheSlotOfARemovedValue() {
        var table = SlottedTable<ProviderItem>(keyOf: { $0.identifier })
        let a = Tree.item("1", "a"), b = Tree.item("2", "b"), c = Tree.item("3", "c")
        table[a.identifier] = a
        table[b.identifier] = b
        #expect(table.removeValue(forKey: a.identifier) == a)
        #expect(table[a.identifier] == nil && table.count == 1)
        table[c.identifier] = c
        var renamed = b
        renamed.name = "b2"
        table[b.identifier] = renamed
        #expect(table[b.identifier]?.name == "b2" && table[c.identifier] == c)
        #expect(table.count == 2 && Set(table.values.map(\.name)) == ["b2", "c"])
        table[c.identifier] = nil
        #expect(table.values.map(\.name) == ["b2"])
    }
}
