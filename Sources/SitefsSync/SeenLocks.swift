import SitefsAPI
import SitefsProvider
import Synchronization

/// Others' locks on documents, as the mount last saw them: every server item on its way to
/// the core passes `LockFileBackend`, which records here the lock each file carries (or
/// that it carries none any more). What it serves: the lock files shown beside locked
/// documents, `user.sitefs.lock`, the locks `sitefs status` lists, and the "document is
/// free" notice for a lock someone here ran into.
///
/// Only locks held elsewhere are kept (a lock this mount holds is the keeper's), at most
/// `capacity` of them: a server reporting more loses the oldest from this view, never a file.
public final class SeenLocks: Sendable {
    public struct Entry: Sendable, Equatable {
        public var document: ItemIdentifier
        public var name: String
        public var parent: ItemIdentifier?
        public var lock: ProviderLock
    }

    static let capacity = 10_000

    private struct State {
        var locks: [ItemIdentifier: Entry] = [:]
        /// Order of arrival, for dropping the oldest past `capacity`.
        var arrival: [ItemIdentifier] = []
        /// Documents someone here ran into the lock of (read its lock file, was refused its
        /// lock): their release is told (`onFree`).
        var watched: Set<ItemIdentifier> = []
    }

    /// Lock order: a leaf.
    private let state = Mutex(State())
    /// Told (no lock held) when a watched document's lock is gone. Lock order: a leaf.
    private let onFree = Mutex<(@Sendable (Entry) -> Void)?>(nil)

    /// Whether this mount holds, or is taking, the lock on a document (`EditingLockKeeper`):
    /// such a lock is never someone else's, even when the server reports it before the
    /// answer to this mount's request arrived. Lock order: a leaf.
    private let own = Mutex<(@Sendable (ItemIdentifier) -> Bool)?>(nil)

    public init() {}

    /// Sets what tells this mount's own locks (see `own`).
    public func whenOwn(_ isOwn: @escaping @Sendable (ItemIdentifier) -> Bool) {
        own.withLock { $0 = isOwn }
    }

    /// Whether the lock on `document` is this mount's (held or being taken).
    public func isOwn(_ document: ItemIdentifier) -> Bool {
        guard let isOwn = own.withLock({ $0 }) else { return false }
        return isOwn(document)
    }

    /// Sets who is told when a watched document's lock is gone.
    public func whenFree(_ handler: @escaping @Sendable (Entry) -> Void) {
        onFree.withLock { $0 = handler }
    }

    /// Records what `item` says of its lock; returns the lock recorded before, if any.
    @discardableResult
    func observe(_ item: ProviderItem) -> Entry? {
        guard item.kind == .file, !item.identifier.isLocal else { return nil }
        let identifier = item.identifier
        let foreign = item.lock.map { !$0.heldHere } == true && !isOwn(identifier)
        let (before, freed) = state.withLock { state -> (Entry?, Entry?) in
            let before = state.locks[identifier]
            guard foreign, let lock = item.lock else {
                guard before != nil else { return (nil, nil) }
                state.locks[identifier] = nil
                state.arrival.removeAll { $0 == identifier }
                return (before, state.watched.remove(identifier) != nil ? before : nil)
            }
            if before == nil {
                state.arrival.append(identifier)
                if state.arrival.count > Self.capacity {
                    let oldest = state.arrival.removeFirst()
                    state.locks[oldest] = nil
                    state.watched.remove(oldest)
                }
            }
            state.locks[identifier] = Entry(document: identifier, name: item.name, parent: item.parent, lock: lock)
            return (before, nil)
        }
        if let freed, let handler = onFree.withLock({ $0 }) { handler(freed) }
        return before
    }

    /// The document is gone (deleted on the server): its lock with it. Returns what was kept.
    @discardableResult
    func forget(_ identifier: ItemIdentifier) -> Entry? {
        state.withLock { state in
            state.watched.remove(identifier)
            guard let entry = state.locks.removeValue(forKey: identifier) else { return nil }
            state.arrival.removeAll { $0 == identifier }
            return entry
        }
    }

    /// Someone else's lock on `document`, as last seen.
    public func lock(of document: ItemIdentifier) -> Entry? {
        state.withLock { $0.locks[document] }
    }

    /// Someone here ran into the lock on `document`: its release will be told.
    public func watch(_ document: ItemIdentifier) {
        state.withLock { state in
            if state.locks[document] != nil { state.watched.insert(document) }
        }
    }

    /// Every lock seen, oldest first.
    public var all: [Entry] {
        state.withLock { state in state.arrival.compactMap { state.locks[$0] } }
    }
}
