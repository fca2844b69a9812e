import SitefsProvider
import SitefsStore
import Synchronization

/// Inode numbers <-> item identifiers, and the kernel's lookup counts.
///
/// An identifier keeps its inode number for the life of the mount (never reused, also
/// after `forget`), so `find`, `rsync` and hard-link detection see stable numbers. The
/// lookup count only tracks what the kernel still references; it is what tells the core
/// which items the kernel may still ask about by number.
final class InodeTable: Sendable {
    /// By slot: inode `first + i` is slot i. Numbers are handed out in sequence and never
    /// reused, so arrays hold them without a hash table's spare buckets, and the index from
    /// identifiers to slots keeps no second copy of the identifiers (a listing of 100,000
    /// entries numbers them all).
    private struct State {
        /// nil once detached.
        var identifiers: [ItemIdentifier?] = []
        /// The kernel's lookups of each slot's inode.
        var lookups: [UInt64] = []
        /// Identifier -> slot, for every identifier bound to a number; a retired identifier
        /// (`rebind`) stays here, leading to the inode that lives on.
        var index = SlotIndex()
        /// What the index holds for a retired identifier: its slot, and the identifier
        /// itself, since its slot's identifier is another now. Few: one per rename-over or
        /// upload of a new file.
        var retired: [ItemIdentifier: Int] = [:]
        var next: InodeNumber { InodeTable.first + InodeNumber(identifiers.count) }

        /// The slot of a number handed out; nil for any other.
        func slot(_ inode: InodeNumber) -> Int? {
            guard inode >= InodeTable.first, inode - InodeTable.first < InodeNumber(identifiers.count) else { return nil }
            return Int(inode - InodeTable.first)
        }

        func slot(of identifier: ItemIdentifier) -> Int? {
            if let retired = retired[identifier] { return retired }
            return index.slot(hash: identifier.hashValue) { identifiers[$0] == identifier }
        }

        func inode(ofSlot slot: Int) -> InodeNumber { InodeTable.first + InodeNumber(slot) }
    }

    /// The first number handed out.
    static let first: InodeNumber = InodeNumber.root + 1

    private let state = Mutex(State())

    /// The inode of an identifier, assigned on first sight.
    func inode(for identifier: ItemIdentifier) -> InodeNumber {
        state.withLock { state in
            if let known = state.slot(of: identifier) { return state.inode(ofSlot: known) }
            let inode = state.next
            state.index.insert(state.identifiers.count, hash: identifier.hashValue)
            state.identifiers.append(identifier)
            state.lookups.append(0)
            return inode
        }
    }

    /// The identifier behind an inode; nil for the root and for numbers never handed out.
    func identifier(of inode: InodeNumber) -> ItemIdentifier? {
        state.withLock { state in state.slot(inode).flatMap { state.identifiers[$0] } }
    }

    func existingInode(for identifier: ItemIdentifier) -> InodeNumber? {
        state.withLock { state in state.slot(of: identifier).map { state.inode(ofSlot: $0) } }
    }

    /// One more kernel reference (an entry reply).
    func countLookup(_ inode: InodeNumber) {
        guard inode != .root else { return }
        state.withLock { state in
            guard let slot = state.slot(inode) else { return }
            state.lookups[slot] += 1
        }
    }

    func forget(_ inode: InodeNumber, lookups: UInt64) {
        state.withLock { state in
            guard let slot = state.slot(inode), state.lookups[slot] > 0 else { return }
            let current = state.lookups[slot]
            // The kernel forgets no more lookups than it was given: more means our counting
            // is wrong. Debug builds (every test run) stop here; a release build clamps.
            assert(lookups <= current, "inode \(inode): forget \(lookups) of \(current) lookups")
            state.lookups[slot] = current > lookups ? current - lookups : 0
        }
    }

    func lookupCount(_ inode: InodeNumber) -> UInt64 {
        state.withLock { state in state.slot(inode).map { state.lookups[$0] } ?? 0 }
    }

    /// After a rename-over, or once a new file has its server id, the inode now stands for
    /// that item; the replaced item's old inode is detached. The retired identifier keeps
    /// leading to this inode, so a lookup that raced with the change (and still found the
    /// old identifier) gets the inode that lives on, not a new one nothing will update.
    func rebind(_ inode: InodeNumber, to identifier: ItemIdentifier) {
        state.withLock { state in
            // Only numbers handed out are bound (every caller's came from here).
            guard let slot = state.slot(inode) else { return }
            if let displaced = state.slot(of: identifier), displaced != slot {
                state.identifiers[displaced] = nil
            }
            // The identifier the slot held until now is retired: it keeps leading here.
            if let old = state.identifiers[slot], old != identifier {
                state.retired[old] = slot
            }
            state.retired[identifier] = nil
            if state.index.slot(hash: identifier.hashValue, where: { $0 == slot }) == nil {
                state.index.insert(slot, hash: identifier.hashValue)
            }
            state.identifiers[slot] = identifier
        }
    }

    /// Number of identifiers known (memory accounting, tests).
    var count: Int { state.withLock { $0.identifiers.count { $0 != nil } } }
}
