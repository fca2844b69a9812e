import SitefsProvider

/// A request for server state (a listing page, an item, a change-feed batch) that is on its
/// way, registered with the `ItemCache` before it is sent. Its answer describes the server as
/// it was at some moment after `began`, so an item this mount changed after `began` (deleted,
/// renamed, saved) is not overwritten by it: see `ItemCache.store(_:asOf:)` and
/// `ItemCache.upsert(_:asOf:)`.
///
/// A read with a `folder` is a whole listing of that folder: what the cache learns of the
/// folder's entries while its pages arrive is applied on top when it is stored
/// (`ItemCache.storeListing(_:fetch:)`).
public struct ServerRead: Sendable {
    fileprivate let id: Int
    /// The folder being listed, for a listing fetch.
    public let folder: ItemIdentifier?
    /// The ledger's generation when the read began.
    fileprivate let began: UInt64
}

/// The bookkeeping behind `ServerRead`: which items changed here after which read began.
///
/// Every change the cache takes from this mount's own operations (or from an answer newer
/// than everything pending) advances a generation counter. While any read is pending, the
/// generation of each item's last change is kept, so an answer to a read that began before
/// it is recognised as older. Without that a change-feed batch asked for just before `rm`
/// deleted a file, and applied just after, put the file back into its folder's listing:
/// `rm -r` then met "Directory not empty", and `ls` showed deleted files for seconds.
///
/// What is kept lives only as long as some read that may need it: it is emptied when the
/// last pending read ends, and pruned to the oldest pending read when it grows large. Not
/// thread-safe: `ItemCache` holds it under its lock.
struct ServerReadLedger {
    struct PendingRead {
        let folder: ItemIdentifier?
        let began: UInt64
        /// For a listing fetch: items whose entry in `folder` may have changed since it began.
        var touched: Set<ItemIdentifier> = []
        /// `ItemCache.forgetListing` ran meanwhile: an operation's outcome is unknown, so what
        /// this listing fetch brings is not stored.
        var forgotten = false
    }

    /// Above this many noted changes, those older than every pending read are dropped when a
    /// read ends (with reads overlapping for a long time the map would otherwise only grow).
    static let pruneThreshold = 4096

    private var generation: UInt64 = 0
    private var nextRead = 0
    private var reads: [Int: PendingRead] = [:]
    /// While any read is pending: the generation of each item's last change here.
    private var changedAt: [ItemIdentifier: UInt64] = [:]

    var hasPendingReads: Bool { !reads.isEmpty }

    /// Number of changes remembered (tests, memory accounting).
    var rememberedChanges: Int { changedAt.count }

    mutating func begin(listing folder: ItemIdentifier?) -> ServerRead {
        nextRead += 1
        reads[nextRead] = PendingRead(folder: folder, began: generation)
        return ServerRead(id: nextRead, folder: folder, began: generation)
    }

    /// Ends a read; returns its bookkeeping, or nil if it had ended already.
    mutating func end(_ read: ServerRead) -> PendingRead? {
        let pending = reads.removeValue(forKey: read.id)
        if reads.isEmpty {
            changedAt.removeAll()
        } else if changedAt.count > Self.pruneThreshold, let oldest = reads.values.lazy.map(\.began).min() {
            changedAt = changedAt.filter { $0.value > oldest }
        }
        return pending
    }

    /// Notes that `identifier` changed here (any of its metadata).
    mutating func noteChange(of identifier: ItemIdentifier) {
        generation += 1
        if !reads.isEmpty { changedAt[identifier] = generation }
    }

    /// Notes a change of `identifier`'s entry in these folders (added, renamed, moved or
    /// removed; all folders being listed when `folders` is nil).
    mutating func noteEntryChange(of identifier: ItemIdentifier, in folders: [ItemIdentifier?]?) {
        noteChange(of: identifier)
        for key in reads.keys {
            guard let folder = reads[key]!.folder, folders?.contains(folder) ?? true else { continue }
            reads[key]!.touched.insert(identifier)
        }
    }

    /// Marks the listing fetches of `folder` as not to be stored.
    mutating func forgetListings(of folder: ItemIdentifier) {
        for key in reads.keys where reads[key]!.folder == folder { reads[key]!.forgotten = true }
    }

    /// True when `identifier` changed here after `read` began: the read's answer about it is
    /// older than what the cache holds. A read that has ended keeps nothing to compare with,
    /// so callers check while their read is still pending.
    func changedSince(_ read: ServerRead, _ identifier: ItemIdentifier) -> Bool {
        guard let changed = changedAt[identifier] else { return false }
        return changed > read.began
    }
}
