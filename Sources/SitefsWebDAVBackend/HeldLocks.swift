import SitefsAPI
import SitefsProvider
import Synchronization

/// The locks this backend took and holds, by item: the tokens its writes on those items carry
/// (RFC 4918 §7.5: without it the server refuses the holder too), and what `unlock` releases.
///
/// Keyed by the item's node, not its path: a lock is held on an identity, and sent by URL,
/// so each write asks the identity table where the item is now. The path at locking time is
/// kept only for an UNLOCK after the identity is gone (the item deleted or replaced on the
/// server meanwhile).
///
/// Lock order: the table's mutex is a leaf. It is held only to read or change an entry, never
/// across a request or an identity-table call; a request is built from a copy of the entry.
/// An entry dropped while a write with its token is in flight makes that write fail as the
/// server decides (the backend's stale-token check then sends it again without the token).
final class HeldLocks: Sendable {
    struct Held: Sendable, Equatable {
        var token: String
        /// Where the item was when locked (components below the mount URL).
        var components: [String]
        /// What the lock was last asked with (the holder shown, device, program, timeout).
        var request: LockRequest
        /// When it was first taken here: kept across refreshes.
        var since: Timestamp
    }

    private let table = Mutex<[IdentityTable.Node: Held]>([:])

    func held(_ node: IdentityTable.Node) -> Held? {
        table.withLock { $0[node] }
    }

    func hold(_ node: IdentityTable.Node, _ held: Held) {
        table.withLock { $0[node] = held }
    }

    /// Drops the entry for `node` if it still holds `token` (a lock taken again meanwhile,
    /// with another token, stays). Whether one was dropped.
    @discardableResult
    func drop(_ node: IdentityTable.Node, token: String) -> Bool {
        table.withLock { table in
            guard table[node]?.token == token else { return false }
            table[node] = nil
            return true
        }
    }

    /// Drops whatever is held on `node` (it is gone from the server, or moved: RFC 4918 §7.7,
    /// a lock does not move with its resource).
    func dropAll(_ node: IdentityTable.Node) {
        table.withLock { _ = $0.removeValue(forKey: node) }
    }

    /// Whether `token` is one this backend holds.
    func holds(token: String) -> Bool {
        table.withLock { $0.values.contains { $0.token == token } }
    }

    var count: Int { table.withLock { $0.count } }
}
