/// A hash index from keys to the slots of an array its owner keeps the keys in: 8 bytes a
/// bucket, where a `Dictionary` from a 32-byte `ItemIdentifier` to a pointer or a number
/// takes 40, and keeps the key a second time. A mount's item cache and inode table index
/// every entry of a listing, so at 100,000 entries the buckets are megabytes.
///
/// The index keeps no keys: `slot(hash:where:)` asks the owner whether the key in a slot
/// is the one sought, so equality stays the owner's (an `ItemIdentifier`'s `==`). A bucket
/// holds the slot and 32 bits of the key's hash, which place it when the table grows and
/// turn away most other keys without asking the owner. Open addressing with linear
/// probing; a removed entry leaves a marker until the next growth or rebuild.
public struct SlotIndex: Sendable {
    /// Bucket values: 0 is empty, `removed` a removed entry, anything else the slot + 1 in
    /// the low 32 bits and the hash tag in the high 32.
    private var buckets: [UInt64] = []
    private static let removed: UInt64 = 0xFFFF_FFFF
    /// Entries held.
    public private(set) var count = 0
    /// Buckets holding `removed`: they lengthen probes until the table is rebuilt.
    private var removedCount = 0

    /// The largest slot an entry may have.
    public static let maximumSlot = Int(UInt32.max) - 2

    public init() {}

    /// The slot of the key whose hash is `hash` and for which `isKey` holds; `isKey` is
    /// asked only of slots whose entry has the same hash tag.
    public func slot(hash: Int, where isKey: (Int) -> Bool) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let tag = Self.tag(hash)
        let mask = buckets.count - 1
        var position = Int(tag) & mask
        while true {
            let bucket = buckets[position]
            if bucket == 0 { return nil }
            if bucket != Self.removed, UInt32(truncatingIfNeeded: bucket >> 32) == tag {
                let slot = Int(bucket & 0xFFFF_FFFF) - 1
                if isKey(slot) { return slot }
            }
            position = (position + 1) & mask
        }
    }

    /// Adds an entry: `slot` holds a key whose hash is `hash`, not in the index yet.
    public mutating func insert(_ slot: Int, hash: Int) {
        precondition(slot >= 0 && slot <= Self.maximumSlot, "slot \(slot) out of range")
        // At most three quarters of the buckets used (entries and removal markers), so a
        // probe ends at an empty bucket soon.
        if (count + removedCount + 1) * 4 > buckets.count * 3 { rebuild(forCount: count + 1) }
        let tag = Self.tag(hash)
        place(UInt64(tag) << 32 | UInt64(slot + 1), tag: tag)
        count += 1
    }

    /// Removes the entry of `slot`, whose key's hash is `hash`. A no-op when it is not there.
    public mutating func remove(_ slot: Int, hash: Int) {
        guard !buckets.isEmpty else { return }
        let tag = Self.tag(hash)
        let entry = UInt64(tag) << 32 | UInt64(slot + 1)
        let mask = buckets.count - 1
        var position = Int(tag) & mask
        while buckets[position] != 0 {
            if buckets[position] == entry {
                buckets[position] = Self.removed
                count -= 1
                removedCount += 1
                return
            }
            position = (position + 1) & mask
        }
    }

    /// Empties the index, keeping nothing allocated.
    public mutating func removeAll() {
        buckets = []
        count = 0
        removedCount = 0
    }

    /// New buckets for `needed` entries, the markers of removed ones dropped: the smallest
    /// power of two that holds them at half load, so the table grows by doubling.
    private mutating func rebuild(forCount needed: Int) {
        var size = 16
        while size < needed * 2 { size *= 2 }
        let old = buckets
        buckets = Array(repeating: 0, count: size)
        removedCount = 0
        for bucket in old where bucket != 0 && bucket != Self.removed {
            place(bucket, tag: UInt32(truncatingIfNeeded: bucket >> 32))
        }
    }

    private mutating func place(_ entry: UInt64, tag: UInt32) {
        let mask = buckets.count - 1
        var position = Int(tag) & mask
        while buckets[position] != 0 && buckets[position] != Self.removed { position = (position + 1) & mask }
        if buckets[position] == Self.removed { removedCount -= 1 }
        buckets[position] = entry
    }

    /// 32 bits of the hash, both halves folded in (a Swift hash is 64 bits on every
    /// platform sitefs runs on, and well mixed in all of them).
    private static func tag(_ hash: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: hash) ^ UInt32(truncatingIfNeeded: hash >> 32)
    }
}
