import SitefsProvider

/// A table from item identifiers to values that a value finds its own key in (the item
/// cache's entries, which hold their item): the values in an array of slots, found through
/// a `SlotIndex`. The same interface as the dictionary it replaces for these uses, at 8
/// bytes a slot and about 16 an index entry, where the dictionary took some 80 an entry
/// (its 40-byte buckets at most three quarters full).
///
/// The slot of a removed value is reused by the next insertion.
struct SlottedTable<Value>: Sendable where Value: Sendable {
    private var slots: [Value?] = []
    private var free: [Int] = []
    private var index = SlotIndex()
    /// The key a value holds.
    private let key: @Sendable (Value) -> ItemIdentifier

    init(keyOf key: @escaping @Sendable (Value) -> ItemIdentifier) {
        self.key = key
    }

    var count: Int { index.count }

    /// Every value, in no particular order.
    var values: [Value] { slots.compactMap { $0 } }

    subscript(identifier: ItemIdentifier) -> Value? {
        get { slot(of: identifier).flatMap { slots[$0] } }
        set {
            if let newValue {
                precondition(key(newValue) == identifier, "a value is stored under its own key")
                if let slot = slot(of: identifier) {
                    slots[slot] = newValue
                } else if let slot = free.popLast() {
                    slots[slot] = newValue
                    index.insert(slot, hash: identifier.hashValue)
                } else {
                    index.insert(slots.count, hash: identifier.hashValue)
                    slots.append(newValue)
                }
            } else {
                _ = removeValue(forKey: identifier)
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey identifier: ItemIdentifier) -> Value? {
        guard let slot = slot(of: identifier) else { return nil }
        let value = slots[slot]
        index.remove(slot, hash: identifier.hashValue)
        slots[slot] = nil
        free.append(slot)
        return value
    }

    private func slot(of identifier: ItemIdentifier) -> Int? {
        index.slot(hash: identifier.hashValue) { slot in slots[slot].map { key($0) == identifier } ?? false }
    }
}
