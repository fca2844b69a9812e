import SitefsProvider
import Synchronization

/// Inode numbers <-> item identifiers, and the kernel's lookup counts.
///
/// An identifier keeps its inode number for the life of the mount (never reused, also
/// after `forget`), so `find`, `rsync` and hard-link detection see stable numbers. The
/// lookup count only tracks what the kernel still references; it is what tells the core
/// which items the kernel may still ask about by number.
final class InodeTable: Sendable {
    private struct State {
        /// By number: inode `first + i` is `identifiers[i]`, nil once detached. Numbers are
        /// handed out in sequence and never reused, so an array holds them without a hash
        /// table's spare buckets (a listing of 100,000 entries numbers them all).
        var identifiers: [ItemIdentifier?] = []
        var inodes: [ItemIdentifier: InodeNumber] = [:]
        var lookups: [InodeNumber: UInt64] = [:]
        var next: InodeNumber { InodeTable.first + InodeNumber(identifiers.count) }

        /// The slot of a number handed out; nil for any other.
        func slot(_ inode: InodeNumber) -> Int? {
            guard inode >= InodeTable.first, inode - InodeTable.first < InodeNumber(identifiers.count) else { return nil }
            return Int(inode - InodeTable.first)
        }
    }

    /// The first number handed out.
    static let first: InodeNumber = InodeNumber.root + 1

    private let state = Mutex(State())

    /// The inode of an identifier, assigned on first sight.
    func inode(for identifier: ItemIdentifier) -> InodeNumber {
        state.withLock { state in
            if let known = state.inodes[identifier] { return known }
            let inode = state.next
            state.identifiers.append(identifier)
            state.inodes[identifier] = inode
            return inode
        }
    }

    /// The identifier behind an inode; nil for the root and for numbers never handed out.
    func identifier(of inode: InodeNumber) -> ItemIdentifier? {
        state.withLock { state in state.slot(inode).flatMap { state.identifiers[$0] } }
    }

    func existingInode(for identifier: ItemIdentifier) -> InodeNumber? {
        state.withLock { $0.inodes[identifier] }
    }

    /// One more kernel reference (an entry reply).
    func countLookup(_ inode: InodeNumber) {
        guard inode != .root else { return }
        state.withLock { $0.lookups[inode, default: 0] += 1 }
    }

    func forget(_ inode: InodeNumber, lookups: UInt64) {
        state.withLock { state in
            guard let current = state.lookups[inode] else { return }
            // The kernel forgets no more lookups than it was given: more means our counting
            // is wrong. Debug builds (every test run) stop here; a release build clamps.
            assert(lookups <= current, "inode \(inode): forget \(lookups) of \(current) lookups")
            state.lookups[inode] = current > lookups ? current - lookups : nil
        }
    }

    func lookupCount(_ inode: InodeNumber) -> UInt64 {
        state.withLock { $0.lookups[inode] ?? 0 }
    }

    /// After a rename-over, or once a new file has its server id, the inode now stands for
    /// that item; the replaced item's old inode is detached. The retired identifier keeps
    /// leading to this inode, so a lookup that raced with the change (and still found the
    /// old identifier) gets the inode that lives on, not a new one nothing will update.
    func rebind(_ inode: InodeNumber, to identifier: ItemIdentifier) {
        state.withLock { state in
            // Only numbers handed out are bound (every caller's came from here).
            guard let slot = state.slot(inode) else { return }
            if let displaced = state.inodes[identifier], displaced != inode, let old = state.slot(displaced) {
                state.identifiers[old] = nil
            }
            state.inodes[identifier] = inode
            state.identifiers[slot] = identifier
        }
    }

    /// Number of identifiers known (memory accounting, tests).
    var count: Int { state.withLock { $0.identifiers.count { $0 != nil } } }
}
