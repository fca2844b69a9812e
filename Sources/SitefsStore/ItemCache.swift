import SitefsAPI
import SitefsProvider
import Synchronization
import SitefsConcurrency

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
        /// When the listing was stored, on the cache's clock: the cache stamps it
        /// (`storeListing`, or the warm start), so a listing made elsewhere has no age yet.
        var fetchedAt: ContinuousClock.Instant = .now

        public init(names: [String], identifiers: [ItemIdentifier]) {
            self.names = names
            self.identifiers = identifiers
        }

        public func identifier(named name: String) -> ItemIdentifier? {
            names.firstIndex { ItemName.same($0, name) }.map { identifiers[$0] }
        }
    }

    private struct State {
        var items = SlottedTable<CachedItem>(keyOf: { $0.identifier })
        /// The context of the item stored last, which the next one shares if it fits.
        var lastContext: CachedItem.Context?
        var listings: [ItemIdentifier: Listing] = [:]
        /// Server reads on their way, and what changed here since each began.
        var reads = ServerReadLedger()
        /// The items made here (local identifiers) held, by the folder they are in: what a
        /// listing fetched from the server may lack (see `storeListing(_:fetch:)`). Few: the
        /// creates not on the server yet.
        var madeHere: [ItemIdentifier: Set<ItemIdentifier>] = [:]

        mutating func keep(_ item: ProviderItem, fetchedAt: ContinuousClock.Instant) {
            if item.identifier.isLocal {
                if let previous = items[item.identifier]?.context.parent, previous != item.parent {
                    forgetMadeHere(item.identifier, in: previous)
                }
                if let parent = item.parent { madeHere[parent, default: []].insert(item.identifier) }
            }
            let cached = CachedItem(item, fetchedAt: fetchedAt, sharing: lastContext)
            lastContext = cached.context
            items[item.identifier] = cached
        }

        mutating func drop(_ identifier: ItemIdentifier) -> ProviderItem? {
            let previous = items.removeValue(forKey: identifier)?.item
            if identifier.isLocal, let parent = previous?.parent { forgetMadeHere(identifier, in: parent) }
            return previous
        }

        private mutating func forgetMadeHere(_ identifier: ItemIdentifier, in folder: ItemIdentifier) {
            madeHere[folder]?.remove(identifier)
            if madeHere[folder]?.isEmpty == true { madeHere[folder] = nil }
        }
    }

    private let state = Mutex(State())
    public let maxAge: Duration
    /// Where changes are mirrored for the next mount (nil: memory only).
    private let persistence: MetadataDatabase?

    /// Ages cached items and listings (the system clock in a mount; manual in tests).
    public let clock: MountClock

    public init(maxAge: Duration, persistence: MetadataDatabase? = nil, clock: MountClock = .system) {
        self.maxAge = maxAge
        self.clock = clock
        self.persistence = persistence
        guard let persistence else { return }
        // Warm start after a clean unmount: what the last mount knew counts as fresh; the
        // change feed, resumed from the saved cursor, brings it up to date. After a kill it is
        // loaded as stale: asked of the server on first use, and used as it is only while
        // the server cannot be reached (see MetadataDatabase.lastRunEndedCleanly): trusted as
        // fresh after a kill, it would let a new file be made under a name the server's file
        // had just been renamed to.
        let fetchedAt = persistence.lastRunEndedCleanly ? clock.now : clock.now - maxAge - .seconds(1)
        let items = persistence.loadItems()
        let listings = persistence.loadListings()
        state.withLock { state in
            for item in items { state.keep(item, fetchedAt: fetchedAt) }
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
            guard let cached = state.items[identifier], cached.fetchedAt.duration(to: clock.now) <= age else { return nil }
            return cached.item
        }
    }

    /// Up to `limit` cached items for which `matches` holds (a search over what the mount has
    /// listed). The items are taken under the lock and tested after it is released, so a
    /// scan of a large cache does not hold up the filesystem.
    public func items(limit: Int, matching matches: (ProviderItem) -> Bool) -> [ProviderItem] {
        let all = state.withLock { Array($0.items.values) }
        var found: [ProviderItem] = []
        for cached in all where matches(cached.item) {
            found.append(cached.item)
            if found.count >= limit { break }
        }
        return found
    }

    /// Stores items a server page brought. With `read` (the page's request, still pending), an
    /// item that changed here since the read began keeps its newer state.
    public func store(_ items: [ProviderItem], asOf read: ServerRead? = nil) {
        let now = clock.now
        state.withLock { state in
            let current = items.filter { item in read.map { !state.reads.changedSince($0, item.identifier) } ?? true }
            for item in current { state.keep(item, fetchedAt: now) }
            persistence?.save(current.filter { !$0.identifier.isLocal })
        }
    }

    /// A listing still within `maxAge` (or any age, for browsing while offline).
    public func listing(of folder: ItemIdentifier, ignoringAge: Bool = false) -> Listing? {
        state.withLock { state in
            guard let listing = state.listings[folder], ignoringAge || listing.fetchedAt.duration(to: clock.now) <= maxAge else { return nil }
            return listing
        }
    }

    /// Registers a request for server state about to be sent (an item, a page, a change-feed
    /// batch); pass it to `store` or `upsert` with the answer, then end it with `endRead`.
    public func beginRead() -> ServerRead {
        state.withLock { $0.reads.begin(listing: nil) }
    }

    /// Registers a whole listing of `folder` about to be fetched, so what changes in the
    /// folder while its pages arrive is applied to them; end it with
    /// `storeListing(_:fetch:)` or `endRead`. Without this, a listing fetched across a new
    /// file's create was stored without the file: the soak's next save of it made a second
    /// file of that name, and the edit went to a conflict copy.
    public func beginListing(of folder: ItemIdentifier) -> ServerRead {
        state.withLock { $0.reads.begin(listing: folder) }
    }

    /// Ends a read whose answer was used (or that failed, or whose directory was closed
    /// early). A no-op for a listing already stored.
    public func endRead(_ read: ServerRead) {
        _ = state.withLock { $0.reads.end(read) }
    }

    /// Stores a listing of `fetch.folder` fetched from the server, with what changed in the
    /// folder since `fetch` began applied to it, and returns what was stored (the fetched
    /// listing as it is when a `forgetListing` meanwhile leaves it unstored).
    ///
    /// A file made here that this cache still holds in the folder stays listed. Its upload
    /// may have created it on the server after the server answered, and the sync engine
    /// stops listing a new file once its create is done, before the core has the server's
    /// item: a listing stored in between would have neither, and a lookup of the name would
    /// fail with ENOENT (make finding no Makefile as its upload ends; `git fsck` finding a
    /// tree `git clone` had just copied into a folder it had made "missing"). The core's
    /// replacing of the item (`replace(_:with:)`) puts the server's in its place.
    @discardableResult
    public func storeListing(_ fetched: Listing, fetch: ServerRead) -> Listing {
        guard let folder = fetch.folder else { preconditionFailure("storeListing(_:fetch:) takes a listing fetch") }
        var listing = fetched
        let forgotten = state.withLock { state -> Bool in
            guard let pending = state.reads.end(fetch) else { return true }
            Self.keepItemsMadeHere(state.madeHere[folder], items: state.items, adding: &listing)
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

    /// Adds to `listing` the items made here that the cache holds in a folder (`madeHere`,
    /// which `State.keep` and `State.drop` keep to the items' parents),
    /// unless `listing` has them or their name (compared as bytes: NFC is not NFD). Whether
    /// the folder was listed before does not matter: a folder made here has no listing
    /// until the first one after its own create.
    private static func keepItemsMadeHere(_ madeHere: Set<ItemIdentifier>?, items: SlottedTable<CachedItem>,
                                          adding listing: inout Listing) {
        guard let madeHere, !madeHere.isEmpty else { return }
        let missing = madeHere.compactMap { identifier in items[identifier].map { ($0.item.name, identifier) } }
            .sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) }
        guard !missing.isEmpty else { return }
        // Asked only when there is one: a folder's listing can have 100,000 entries.
        let listed = Set(listing.identifiers)
        let names = Set(listing.names.map { Array($0.utf8) })
        for (name, identifier) in missing where !listed.contains(identifier) && !names.contains(Array(name.utf8)) {
            listing.names.append(name)
            listing.identifiers.append(identifier)
        }
    }

    public func storeListing(_ listing: Listing, of folder: ItemIdentifier) {
        var listing = listing
        listing.fetchedAt = clock.now
        state.withLock { [listing] in $0.listings[folder] = listing }
        // Files only this mount has are restored from the upload journal, not from here.
        var serverOnly = listing
        if listing.identifiers.contains(where: \.isLocal) {
            let kept = listing.identifiers.indices.filter { !listing.identifiers[$0].isLocal }
            serverOnly = Listing(names: kept.map { listing.names[$0] }, identifiers: kept.map { listing.identifiers[$0] })
        }
        persistence?.saveListing(serverOnly, of: folder)
    }

    /// Makes a folder's listing and its items stale after an operation whose outcome on the
    /// server is unknown (the answer was lost): the next lookup asks the server. They are
    /// kept as they were, as a listing loaded after a kill is, for while the server cannot be
    /// reached: a failure in transit is often the first sign of going offline, and the files
    /// this mount listed (pinned ones too) stay reachable through it.
    public func forgetListing(of folder: ItemIdentifier) {
        let stale = clock.now - maxAge - .seconds(1)
        state.withLock { state in
            state.reads.forgetListings(of: folder)
            guard var listing = state.listings[folder] else { return }
            listing.fetchedAt = stale
            state.listings[folder] = listing
            for identifier in listing.identifiers {
                if let cached = state.items[identifier] { state.items[identifier] = CachedItem(cached, fetchedAt: stale) }
                state.reads.noteChange(of: identifier)  // a page in flight must not bring it back as fresh
            }
        }
        persistence?.forgetListing(of: folder)
    }

    /// Where an item was listed before an upsert moved or renamed it (for kernel invalidation).
    public typealias FormerEntry = (parent: ItemIdentifier, name: String)

    /// What `upsert(_:asOf:)` did with a server report.
    public enum ReportOutcome {
        /// Stored; `formerEntry` as for `upsert(_:)`.
        case stored(previous: ProviderItem?, formerEntry: FormerEntry?)
        /// Older than a change made here since its read began (the item was deleted, renamed
        /// or saved meanwhile): not stored.
        case stale
    }

    /// A new or changed item this mount made or was answered with for its own operation:
    /// metadata stored, and its entry put in (or moved to) the listing of its current parent
    /// when that listing is cached. Returns where it was listed before, if that differs (for
    /// kernel invalidation).
    @discardableResult
    public func upsert(_ item: ProviderItem) -> FormerEntry? {
        state.withLock { upsert(item, in: &$0) }
    }

    /// An item as a server read reported it (a change-feed batch, an item fetched): stored
    /// unless the item changed here after `read` began. Call while `read` is pending.
    public func upsert(_ item: ProviderItem, asOf read: ServerRead) -> ReportOutcome {
        state.withLock { state in
            if state.reads.changedSince(read, item.identifier) { return .stale }
            let previous = state.items[item.identifier]?.item
            return .stored(previous: previous, formerEntry: upsert(item, in: &state))
        }
    }

    /// A server's answer to an operation on an item already known here (an upload, a
    /// rename, a time set): stored only while the cache still knows the item. An item removed
    /// meanwhile (deleted here while the upload was on its way) stays removed, and one
    /// forgotten (an outcome unknown) is asked of the server on its next use anyway.
    /// Returns true when stored.
    @discardableResult
    public func upsertIfKnown(_ item: ProviderItem) -> Bool {
        state.withLock { state in
            guard state.items[item.identifier] != nil else { return false }
            _ = upsert(item, in: &state)
            return true
        }
    }

    private func upsert(_ item: ProviderItem, in state: inout State) -> FormerEntry? {
        let persistence = item.identifier.isLocal ? nil : self.persistence
        persistence?.save([item])
        let previous = state.items[item.identifier]?.item
        state.keep(item, fetchedAt: clock.now)
        let renamed = previous.map { !ItemName.same($0.name, item.name) } ?? true
        if previous?.parent != item.parent || renamed {
            state.reads.noteEntryChange(of: item.identifier, in: [previous?.parent, item.parent])
        } else {
            state.reads.noteChange(of: item.identifier)  // e.g. an upload's new version and size
        }
        var old: FormerEntry?
        if let previous, let previousParent = previous.parent,
           previousParent != item.parent || renamed {
            old = (previousParent, previous.name)
            if previousParent != item.parent { removeEntry(item.identifier, from: previousParent, in: &state) }
        }
        // Changed where it is stored: a copy taken out and put back would copy the whole
        // listing on every change (a folder of 1,000 new files, 1,000 times).
        if let parent = item.parent, state.listings[parent] != nil {
            if let index = state.listings[parent]!.identifiers.firstIndex(of: item.identifier) {
                if !ItemName.same(state.listings[parent]!.names[index], item.name) {
                    state.listings[parent]!.names[index] = item.name  // a rename keeps its place, as on the server
                    persistence?.renameEntry(item.identifier, to: item.name, in: parent)
                }
            } else {
                state.listings[parent]!.names.append(item.name)
                state.listings[parent]!.identifiers.append(item.identifier)
                persistence?.appendEntry(item.identifier, named: item.name, to: parent)
            }
        }
        return old
    }

    /// Keeps `item`'s metadata, listed nowhere, when the cache holds none: what a reader
    /// finds of a new item before `replace(_:with:)` lists it. An item known already keeps
    /// what it had, so that `replace` sees where it was listed.
    public func storeIfUnknown(_ item: ProviderItem) {
        state.withLock { state in
            guard state.items[item.identifier] == nil else { return }
            state.keep(item, fetchedAt: clock.now)
            if !item.identifier.isLocal { persistence?.save([item]) }
        }
    }

    /// `former` lives on as `item` (a new file or folder now on the server, a file that took
    /// another's place): `item` stored as by `upsert(_:)` and `former` removed as by
    /// `remove(_:)`, in one step, so no listing or lookup meanwhile finds both or neither.
    /// Returns where `former` was listed.
    @discardableResult
    public func replace(_ former: ItemIdentifier, with item: ProviderItem) -> FormerEntry? {
        state.withLock { state in
            _ = upsert(item, in: &state)
            // A new entry in its folder for a listing on its way, though its metadata may have
            // been stored before (unlisted, for readers that follow the inode).
            state.reads.noteEntryChange(of: item.identifier, in: [item.parent])
            return former == item.identifier ? nil : remove(former, in: &state)
        }
    }

    /// Forgets an item (deleted on the server), its listing, and its entry in its parent.
    /// Returns where it was listed.
    @discardableResult
    public func remove(_ identifier: ItemIdentifier) -> FormerEntry? {
        state.withLock { remove(identifier, in: &$0) }
    }

    private func remove(_ identifier: ItemIdentifier, in state: inout State) -> FormerEntry? {
        let previous = state.drop(identifier)
        // An item made here is never stored on disk (`upsert`), and only a folder has a
        // listing: a file made here that became the server's item leaves nothing to delete.
        if !identifier.isLocal || previous?.kind != .file { persistence?.remove(identifier) }
        state.listings[identifier] = nil
        // Without its metadata its folder is unknown: any listing being fetched may hold it.
        state.reads.noteEntryChange(of: identifier, in: previous?.parent.map { [$0] })
        if previous == nil, identifier.isLocal {
            // Something made here can be listed without being cached itself: a listing
            // fetched while it was pending shows it (the engine's view of what was made
            // here) though a forgotten listing took its metadata. Its folder is unknown
            // then, so every listing holding it drops it: a stale entry would answer its
            // name with ENOENT once the server's item of that name is there too.
            for (folder, listing) in state.listings where listing.identifiers.contains(identifier) {
                removeEntry(identifier, from: folder, in: &state)
            }
        }
        guard let parent = previous?.parent else { return nil }
        removeEntry(identifier, from: parent, in: &state)
        return (parent, previous!.name)
    }

    private func removeEntry(_ identifier: ItemIdentifier, from parent: ItemIdentifier, in state: inout State) {
        guard let index = state.listings[parent]?.identifiers.firstIndex(of: identifier) else { return }
        state.listings[parent]!.identifiers.remove(at: index)  // in place, as in `upsert`
        state.listings[parent]!.names.remove(at: index)
        // A listing on disk holds no entry made here (`upsert`, `storeListing`).
        if !identifier.isLocal { persistence?.removeEntry(identifier, from: parent) }
    }

    /// Number of items known (memory accounting).
    public var itemCount: Int { state.withLock { $0.items.count } }

    /// Number of changes remembered for pending server reads (tests: it must drain).
    public var rememberedChanges: Int { state.withLock { $0.reads.rememberedChanges } }
}
