import SitefsProvider
import Synchronization

/// The locks for editing one `HTTPDocumentBackend` (one mount) holds: per item, the lock's
/// public id and its secret token. The token goes out in `Lock-Token` on every write of
/// the item; the id tells this backend's lock from someone else's (or a later one of the
/// same account's) when items are listed (`ProviderLock.heldHere`).
///
/// Only in memory: a mount that restarts holds nothing, and its old locks expire by
/// themselves on the server.
final class HeldLocks: Sendable {
    struct Held: Sendable, Equatable {
        let lockID: String
        let token: String
    }

    /// Lock order: a leaf. Taken only to read or change the map, never across a network
    /// call or any other lock.
    private let entries = Mutex<[ItemIdentifier: Held]>([:])

    /// Most tokens one request carries (the server refuses more than 64).
    static let maximumTokensPerRequest = 64

    func held(_ item: ItemIdentifier) -> Held? {
        entries.withLock { $0[item] }
    }

    func hold(_ item: ItemIdentifier, _ held: Held) {
        entries.withLock { $0[item] = held }
    }

    /// Forgets the lock on `item`, only if it is still `lockID` (a lock taken again
    /// meanwhile stays).
    func drop(_ item: ItemIdentifier, lockID: String) {
        entries.withLock { entries in
            if entries[item]?.lockID == lockID { entries[item] = nil }
        }
    }

    /// Item -> lock id, for response validation.
    func lockIDs() -> [ItemIdentifier: String] {
        entries.withLock { $0.mapValues(\.lockID) }
    }

    /// The tokens a write on `item` carries: its own, and with `wholeSite` those of every
    /// lock held in its site (the write may reach other files: a folder's deletion, a
    /// rename-over onto a file whose id the caller does not know), its own first, at most
    /// `maximumTokensPerRequest`.
    func tokens(for item: ItemIdentifier, wholeSite: Bool) -> [String] {
        entries.withLock { entries in
            var tokens = entries[item].map { [$0.token] } ?? []
            if wholeSite {
                for (other, held) in entries where other != item && other.site == item.site {
                    guard tokens.count < Self.maximumTokensPerRequest else { break }
                    tokens.append(held.token)
                }
            }
            return tokens
        }
    }
}
