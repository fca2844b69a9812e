import SitefsAPI
import SitefsProvider
import Synchronization

/// What the mount knows of the server's tree: item metadata and folder listings, so that
/// `stat`, `ls -l` and `find` are answered without a request once a folder was listed.
///
/// Listings are complete snapshots in server order; the change feed and local operations
/// keep them current, and `maxAge` bounds how long one is trusted without either. The root
/// (the list of sites) is keyed by `ItemCache.root`.
public final class ItemCache: Sendable {
    /// Key of the root listing (the sites).
    public static let root = ItemIdentifier(site: "", id: "")

    public struct Listing: Sendable {
        /// Names as shown (site names made unique), in order.
        public var names: [String]
        public var identifiers: [ItemIdentifier]
        public var fetchedAt: ContinuousClock.Instant

        public init(names: [String], identifiers: [ItemIdentifier], fetchedAt: ContinuousClock.Instant = .now) {
            self.names = names
            self.identifiers = identifiers
            self.fetchedAt = fetchedAt
        }

        public func identifier(named name: String) -> ItemIdentifier? {
            names.firstIndex(of: name).map { identifiers[$0] }
        }
    }

    /// A class, so the dictionary's buckets (twice as many as entries, at worst) hold a
    /// pointer rather than the whole item: at 100,000 items that halves the memory.
    private final class Cached: @unchecked Sendable {  // immutable; replaced, never changed
        let item: ProviderItem
        let fetchedAt: ContinuousClock.Instant

        init(item: ProviderItem, fetchedAt: ContinuousClock.Instant) {
            self.item = item
            self.fetchedAt = fetchedAt
        }
    }

    /// A folder listing on its way from the server (`beginListing`). Its pages are a
    /// snapshot of when each was served, so what the cache learns of the folder's entries
    /// meanwhile (a create confirmed, a file renamed or deleted here, a change-feed report)
    /// is noted and applied on top when the listing is stored, and a page's items do not
    /// overwrite what changed after the page was asked for (`store(_:requestedAt:)`).
    /// Without this, a listing fetched across a new file's create was stored without the
    /// file: the soak's next save of it made a second file of that name, and the edit went to
    /// a conflict copy.
    public struct ListingFetch: Sendable {
        fileprivate let id: Int
        public let folder: ItemIdentifier
    }

    private struct PendingFetch {
        let folder: ItemIdentifier
        /// Items whose entry in `folder` may have changed since the fetch began.
        var touched: Set<ItemIdentifier> = []
        /// `forgetListing` ran meanwhile: an operation's outcome is unknown, so what this
        /// fetch brings is not stored.
        var forgotten = false
    }

    private struct State {
        var items: [ItemIdentifier: Cached] = [:]
        var listings: [ItemIdentifier: Listing] = [:]
        var fetches: [Int: PendingFetch] = [:]
        var nextFetch = 0
        /// While any fetch is pending: when each item last changed here, so a page asked for
        /// before that does not bring its old state back. Emptied when the last fetch ends.
        var changedAt: [ItemIdentifier: ContinuousClock.Instant] = [:]

        /// Notes that `identifier` changed here (any of its metadata), for pages asked for
        /// before now.
        mutating func noteChange(of identifier: ItemIdentifier) {
            if !fetches.isEmpty { changedAt[identifier] = .now }
        }

        /// Notes a change of `identifier`'s entry in these folders (added, renamed, moved or
        /// removed; all folders being fetched when `folders` is nil) for the fetches of them.
        mutating func touch(_ identifier: ItemIdentifier, in folders: [ItemIdentifier?]?) {
            guard !fetches.isEmpty else { return }
            noteChange(of: identifier)
            for key in fetches.keys where folders?.contains(fetches[key]!.folder) ?? true {
                fetches[key]!.touched.insert(identifier)
            }
        }

        mutating func endFetch(_ fetch: ListingFetch) -> PendingFetch? {
            let pending = fetches.removeValue(forKey: fetch.id)
            if fetches.isEmpty { changedAt.removeAll() }
            return pending
        }
    }

    private let state = Mutex(State())
    public let maxAge: Duration
    /// Where changes are mirrored for the next mount (nil: memory only).
    private let persistence: MetadataDatabase?

    public init(maxAge: Duration, persistence: MetadataDatabase? = nil) {
        self.maxAge = maxAge
        self.persistence = persistence
        guard let persistence else { return }
        // Warm start after a clean unmount: what the last mount knew counts as fresh; the
        // change feed, resumed from the saved cursor, brings it up to date. After a kill it is
        // loaded as stale: asked of the server on first use, and used as it is only while
        // the server cannot be reached (see MetadataDatabase.lastRunEndedCleanly). The soak
        // caught a new file made under a name the server's file had just been renamed to.
        let fetchedAt = persistence.lastRunEndedCleanly ? ContinuousClock.now : ContinuousClock.now - maxAge - .seconds(1)
        let items = persistence.loadItems()
        let listings = persistence.loadListings()
        state.withLock { state in
            for item in items { state.items[item.identifier] = Cached(item: item, fetchedAt: fetchedAt) }
            for (folder, var listing) in listings {
                listing.fetchedAt = fetchedAt
                state.listings[folder] = listing
            }
        }
    }

    public func item(_ identifier: ItemIdentifier) -> ProviderItem? {
        state.withLock { $0.items[identifier]?.item }
    }

    /// The item if it was confirmed within `age`.
    public func item(_ identifier: ItemIdentifier, notOlderThan age: Duration) -> ProviderItem? {
        state.withLock { state in
            guard let cached = state.items[identifier], cached.fetchedAt.duration(to: .now) <= age else { return nil }
            return cached.item
        }
    }

    /// Stores items a server page brought. With `requestedAt` (when the page was asked for),
    /// an item that changed here since then keeps its newer state (see ListingFetch).
    public func store(_ items: [ProviderItem], requestedAt: ContinuousClock.Instant? = nil) {
        let now = ContinuousClock.now
        let stored = state.withLock { state in
            let current = items.filter { item in
                guard let requestedAt, let changed = state.changedAt[item.identifier] else { return true }
                return changed < requestedAt
            }
            for item in current { state.items[item.identifier] = Cached(item: item, fetchedAt: now) }
            return current
        }
        persistence?.save(stored.filter { !$0.identifier.isLocal })
    }

    /// A listing still within `maxAge` (or any age, for browsing while offline).
    public func listing(of folder: ItemIdentifier, ignoringAge: Bool = false) -> Listing? {
        state.withLock { state in
            guard let listing = state.listings[folder], ignoringAge || listing.fetchedAt.duration(to: .now) <= maxAge else { return nil }
            return listing
        }
    }

    /// Starts noting changes to `folder`'s entries for a listing about to be fetched; end it
    /// with `storeListing(_:fetch:)` or `abandon(_:)`.
    public func beginListing(of folder: ItemIdentifier) -> ListingFetch {
        state.withLock { state in
            state.nextFetch += 1
            state.fetches[state.nextFetch] = PendingFetch(folder: folder)
            return ListingFetch(id: state.nextFetch, folder: folder)
        }
    }

    /// A fetch that will not be stored (it failed, or its directory was closed early).
    public func abandon(_ fetch: ListingFetch) {
        _ = state.withLock { $0.endFetch(fetch) }
    }

    /// Stores a listing of `fetch.folder` fetched from the server, with what changed in the
    /// folder since `fetch` began applied to it, and returns what was stored (the fetched
    /// listing as it is when a `forgetListing` meanwhile leaves it unstored).
    @discardableResult
    public func storeListing(_ fetched: Listing, fetch: ListingFetch) -> Listing {
        let folder = fetch.folder
        var listing = fetched
        let forgotten = state.withLock { state -> Bool in
            guard let pending = state.endFetch(fetch) else { return true }
            for identifier in pending.touched {
                let current = state.items[identifier]?.item
                let index = listing.identifiers.firstIndex(of: identifier)
                if let current, current.parent == folder {
                    if let index {
                        listing.names[index] = current.name
                    } else {
                        listing.names.append(current.name)
                        listing.identifiers.append(identifier)
                    }
                } else if let index {
                    listing.names.remove(at: index)
                    listing.identifiers.remove(at: index)
                }
            }
            return pending.forgotten
        }
        if !forgotten { storeListing(listing, of: folder) }
        return listing
    }

    public func storeListing(_ listing: Listing, of folder: ItemIdentifier) {
        state.withLock { $0.listings[folder] = listing }
        // Files only this mount has are restored from the upload journal, not from here.
        var serverOnly = listing
        if listing.identifiers.contains(where: \.isLocal) {
            let kept = listing.identifiers.indices.filter { !listing.identifiers[$0].isLocal }
            serverOnly = Listing(names: kept.map { listing.names[$0] }, identifiers: kept.map { listing.identifiers[$0] })
        }
        persistence?.saveListing(serverOnly, of: folder)
    }

    /// Forgets a folder's listing (and its items' freshness) after an operation whose outcome
    /// on the server is unknown (the answer was lost): the next lookup asks the server.
    public func forgetListing(of folder: ItemIdentifier) {
        state.withLock { state in
            for key in state.fetches.keys where state.fetches[key]!.folder == folder { state.fetches[key]!.forgotten = true }
            guard let listing = state.listings.removeValue(forKey: folder) else { return }
            for identifier in listing.identifiers {
                state.items[identifier] = nil
                state.noteChange(of: identifier)  // a page in flight must not bring it back as fresh
            }
        }
        persistence?.forgetListing(of: folder)
    }

    /// A new or changed item: metadata stored, and its entry put in (or moved to) the
    /// listing of its current parent when that listing is cached. Returns where it was
    /// listed before, if that differs (for kernel invalidation).
    @discardableResult
    public func upsert(_ item: ProviderItem) -> (parent: ItemIdentifier, name: String)? {
        let now = ContinuousClock.now
        let persistence = item.identifier.isLocal ? nil : self.persistence
        persistence?.save([item])
        return state.withLock { state in
            let previous = state.items[item.identifier]?.item
            state.items[item.identifier] = Cached(item: item, fetchedAt: now)
            if previous?.parent != item.parent || previous?.name != item.name {
                state.touch(item.identifier, in: [previous?.parent, item.parent])
            } else {
                state.noteChange(of: item.identifier)  // e.g. an upload's new version and size
            }
            var old: (ItemIdentifier, String)?
            if let previous, let previousParent = previous.parent,
               previousParent != item.parent || previous.name != item.name {
                old = (previousParent, previous.name)
                if previousParent != item.parent { removeEntry(item.identifier, from: previousParent, in: &state) }
            }
            if let parent = item.parent, var listing = state.listings[parent] {
                if let index = listing.identifiers.firstIndex(of: item.identifier) {
                    if listing.names[index] != item.name {
                        listing.names[index] = item.name  // a rename keeps its place, as on the server
                        persistence?.renameEntry(item.identifier, to: item.name, in: parent)
                    }
                } else {
                    listing.names.append(item.name)
                    listing.identifiers.append(item.identifier)
                    persistence?.appendEntry(item.identifier, named: item.name, to: parent)
                }
                state.listings[parent] = listing
            }
            return old
        }
    }

    /// Forgets an item (deleted on the server), its listing, and its entry in its parent.
    /// Returns where it was listed.
    @discardableResult
    public func remove(_ identifier: ItemIdentifier) -> (parent: ItemIdentifier, name: String)? {
        persistence?.remove(identifier)
        return state.withLock { state in
            let previous = state.items.removeValue(forKey: identifier)?.item
            state.listings[identifier] = nil
            // Without its metadata its folder is unknown: any listing being fetched may hold it.
            state.touch(identifier, in: previous?.parent.map { [$0] })
            guard let parent = previous?.parent else { return nil }
            removeEntry(identifier, from: parent, in: &state)
            return (parent, previous!.name)
        }
    }

    private func removeEntry(_ identifier: ItemIdentifier, from parent: ItemIdentifier, in state: inout State) {
        guard var listing = state.listings[parent], let index = listing.identifiers.firstIndex(of: identifier) else { return }
        listing.identifiers.remove(at: index)
        listing.names.remove(at: index)
        state.listings[parent] = listing
        persistence?.removeEntry(identifier, from: parent)
    }

    /// Number of items known (memory accounting).
    public var itemCount: Int { state.withLock { $0.items.count } }
}
