import Foundation
import Logging
import SitefsAPI
import SitefsHTTP
import SitefsProvider
import SitefsWebDAV
import Synchronization

/// A WebDAV server (RFC 4918) as a `DocumentBackend`: the collections directly under the
/// mount URL are the sites, items get stable identities from `IdentityTable`, listings are
/// PROPFIND `Depth: 1` served page by page as they stream in (`ListingStreams`), content is
/// ranged GET, saves are conditional PUTs, renames MOVE. README.md beside this file writes
/// down how the model maps and what each server tested does differently.
public final class WebDAVDocumentBackend: DocumentBackend {
    let transport: WebDAVTransport
    let listing: WebDAVListing
    let identities: IdentityTable
    let streams: ListingStreams
    let logger: Logger
    /// Things said once per mount: a file without an ETag, a server ignoring Range. This and
    /// `taggedFiles` are leaves: held only to read or set the value, never across a call.
    private let said = Mutex<Set<String>>([])
    /// Whether the server lists files with an ETag (nil until a listing showed one file).
    private let taggedFiles = Mutex<Bool?>(nil)
    /// Children resolved and checked in one identity transaction while a listing streams: the
    /// first batch small, so the first entries reach the reader soon, each next one twice
    /// the last, up to the largest. A transaction writes every page it touches whole, and a
    /// listing's names land all over the table's name index (a server lists in its own
    /// order), so each batch rewrites most of that index: a 100,000-entry folder in batches
    /// of 256 wrote some 300 MiB for a table of 5 MiB. A larger largest batch writes less but
    /// holds more entries at once: at 4,096 that listing's peak RSS grew by 2-4 MiB, at 2,048
    /// it stayed within the spread of the runs (85-90 MiB).
    static let listingBatches = (first: 256, largest: 2_048)
    /// The locks this backend holds (see `HeldLocks`), when it first saw others' locks that do
    /// not say when they were taken, and whether the server locks at all (nil until asked):
    /// leaves, like `said`.
    let heldLocks = HeldLocks()
    let lockSightings = LockSightings()
    let lockSupportFound = Mutex<LockSupport?>(nil)
    /// Tests only: runs in every write that carries the locks held here, after they are
    /// chosen and before it is first sent (`sendHoldingLocks`), so a test can take a lock there.
    let writePause = Mutex<(@Sendable () -> Void)?>(nil)
    /// What the server's OPTIONS said about search (nil until asked; see
    /// `WebDAVDocumentBackend+Search`). A leaf, like `said`.
    let searchSupportFound = Mutex<SearchSupport?>(nil)
    /// Whether the server keeps dead properties (nil until a PROPPATCH answered): see
    /// `WebDAVDocumentBackend+Properties`. A leaf, like `said`.
    let propertiesKept = Mutex<Bool?>(nil)

    public init(location: WebDAVLocation, credentials: any AuthorizationSource, identities: IdentityTable,
                timeouts: HTTPClient.Timeouts = .default, caFile: String? = nil, logger: Logger) {
        let client = HTTPClient(baseURL: location.origin, timeouts: timeouts, caFile: caFile)
        transport = WebDAVTransport(client: client, location: location, credentials: credentials)
        listing = WebDAVListing(client: client, basePath: location.basePath, origin: location.origin)
        self.identities = identities
        let wait = timeouts.overall ?? timeouts.lowSpeedTime * 3
        streams = ListingStreams(pageWait: Double(wait.components.seconds) + 1)
        self.logger = logger
    }

    var location: WebDAVLocation { transport.location }

    // MARK: Enumeration and metadata

    public func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        let root = IdentityTable.Location(components: [], isCollection: true, site: IdentityTable.root, parent: IdentityTable.root)
        return try page(of: IdentityTable.root, at: root, shownAs: nil, after: token, limit: limit)
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        let (node, location) = try resolve(folder)
        return try page(of: node, at: location, shownAs: folder, after: token, limit: limit)
    }

    public func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        let (node, location) = try resolve(identifier)
        return try freshItem(node, at: location)
    }

    /// The item at `node` as the server has it now (`PROPFIND Depth: 0`).
    func freshItem(_ node: IdentityTable.Node, at location: IdentityTable.Location) throws(ProviderError) -> ProviderItem {
        try fresh(node, at: location).item
    }

    /// The item at `node` as the server has it now, and whether the server marked its tag
    /// weak (which `If-Match` never matches).
    ///
    /// `node` nil: whatever node the name resolves to (made now for a file just created).
    /// `keeping`: an upload's modification time, kept for the version found when the server
    /// shows another time (it could not store it), in the same commit as the sighting.
    func fresh(_ node: IdentityTable.Node?, at location: IdentityTable.Location,
               keeping modified: Timestamp? = nil) throws(ProviderError) -> (item: ProviderItem, weakTag: Bool) {
        let operation = "PROPFIND \(location.components.last ?? "/")"
        let entry: WebDAVEntry?
        do throws(WebDAVListingError) {
            entry = try listing.resource(at: location.components, collection: location.isCollection,
                                         headers: transport.authorizationHeaders)
        } catch {
            throw WebDAVTransport.error(for: error, operation)
        }
        guard let entry else { throw .notFound }
        let facts = WebDAVItems.Facts(entry.properties)
        var seen = sighting(of: entry, facts)
        if let modified, facts.seconds != modified.timespecParts.seconds || modified.microseconds % 1_000_000 != 0 {
            seen.keepModified = modified.microseconds
        }
        let resolved = try table { try identities.nodes(for: [seen], in: location.parent) }[0]
        // Another item has the name now (the server's file id says so): this one is gone.
        if let node, resolved.node != node { throw .notFound }
        let parent = location.parent == IdentityTable.root ? nil : WebDAVItems.identifier(location.parent, site: location.site)
        let placement = WebDAVItems.Placement(node: resolved.node, site: location.site, parent: parent,
                                              keptModified: resolved.keptModified, version: resolved.version)
        observe(entry)
        let item = try WebDAVItems.item(named: entry.name, entry.properties, facts, at: placement, lock: shownLock(entry.properties.locks))
        return (shown(item, named: entry.name, keptMode: resolved.keptMode, facts), EntityTag.isWeak(entry.properties.etag))
    }

    // MARK: Listings

    private func page(of folder: IdentityTable.Node, at location: IdentityTable.Location, shownAs identifier: ItemIdentifier?,
                      after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        guard location.isCollection else { throw .refused(status: 0, code: "not_a_folder", message: "not a collection") }
        var skip = 0
        if let token {
            guard let (stream, position) = streams.stream(for: token) else {
                throw .invalidResponse("a listing token that is not this backend's: \(token.rawValue.prefix(40))")
            }
            if let stream { return try streams.page(of: stream, at: position, limit: limit) }
            skip = position  // that listing is gone: list again, from where the caller is
        }
        let stream = streams.start(skipping: skip) { [self] stream in
            produce(into: stream, folder: folder, at: location, shownAs: identifier)
        }
        return try streams.page(of: stream, at: skip, limit: limit)
    }

    /// The producer of one listing (its own thread): the PROPFIND, identities in batches, the
    /// checked items into the stream; the children the server no longer has forgotten.
    /// Links (`.rclonelink` files) are held back to the end, when the whole folder is known:
    /// one that has the shown name of a plain file or folder there is left out (the plain
    /// item wins, so a lookup of the name is the same whatever order the server lists in).
    private func produce(into stream: ListingStreams.Stream, folder: IdentityTable.Node, at location: IdentityTable.Location,
                         shownAs identifier: ItemIdentifier?) {
        var pending: [WebDAVEntry] = []
        var refused: [String] = []
        var seen = Set<IdentityTable.Node>()
        var links: [ProviderItem] = []
        var failure: ProviderError?
        var batch = Self.listingBatches.first
        // A folder listed for the first time has no numbers yet: its entries are added
        // first, not looked up first (`IdentityTable.nodes(for:in:likelyNew:)`). Only a
        // matter of speed: a failure to ask takes the usual way.
        let firstListing = (try? identities.hasChildren(folder)) == false
        let mark = identities.beginListing()
        defer { identities.endListing(mark) }
        let flush = { [self] in
            guard failure == nil, !pending.isEmpty || !refused.isEmpty else { return }
            do throws(ProviderError) {
                let facts = pending.map { WebDAVItems.Facts($0.properties) }
                let sightings = zip(pending, facts).map { sighting(of: $0, $1) }
                let resolved = try table { try identities.nodes(for: sightings, in: folder, likelyNew: firstListing, listed: true) }
                var items: [ProviderItem] = []
                items.reserveCapacity(pending.count)
                for ((entry, facts), found) in zip(zip(pending, facts), resolved) {
                    seen.insert(found.node)
                    // A site is its own site; anything deeper is in the folder's.
                    let placement = WebDAVItems.Placement(node: found.node, site: identifier == nil ? found.node : location.site,
                                                          parent: identifier, keptModified: found.keptModified, version: found.version)
                    do throws(ProviderError) {
                        let item = shown(try WebDAVItems.item(named: entry.name, entry.properties, facts, at: placement,
                                                              lock: shownLock(entry.properties.locks)),
                                         named: entry.name, keptMode: found.keptMode, facts)
                        if item.kind == .symlink { links.append(item) } else { items.append(item) }
                        observe(entry)
                    } catch {
                        refused.append(error.description)
                    }
                }
                if !stream.deliver(items, refused: refused) { failure = .cancelled }
            } catch {
                failure = error
            }
            pending.removeAll(keepingCapacity: true)
            refused.removeAll()
            batch = min(batch * 2, Self.listingBatches.largest)
        }
        do throws(WebDAVListingError) {
            try listing.children(of: location.components, headers: transport.authorizationHeaders,
                                 isCancelled: { stream.isAbandoned },
                                 onEntry: { entry in
                                     pending.append(entry)
                                     if pending.count >= batch { flush() }
                                 },
                                 onRefused: { refused.append($0) })
            flush()
        } catch {
            failure = failure ?? WebDAVTransport.error(for: error, "PROPFIND \(location.components.last ?? "/")")
        }
        if failure == nil {
            do throws(ProviderError) {
                let unlisted = identifier == nil ? [] : try unlistedDotChildren(of: folder, keeping: seen, listedSince: mark)
                seen.formUnion(unlisted.map(\.node))
                try table { try identities.prune(childrenOf: folder, keeping: seen, listedSince: mark) }
                if !unlisted.isEmpty, !stream.deliver(unlisted.map(\.item), refused: []) { throw .cancelled }
                if !links.isEmpty { try deliverLinks(links, in: folder, into: stream) }
            } catch {
                failure = error
            }
        }
        stream.finish(failure)
    }

    /// The children this mount knows by a name that starts with a dot which a whole listing
    /// left out, each asked for on its own (PROPFIND, depth 0): those still there, as items.
    /// nginx's WebDAV module lists no dot-files though it serves them; without this a
    /// listing would prune a `.git` made here, and everything below it, from the identity
    /// table. A dot-file only another client made is not known here, and stays unlisted there.
    private func unlistedDotChildren(of folder: IdentityTable.Node, keeping seen: Set<IdentityTable.Node>,
                                     listedSince mark: IdentityTable.ListingMark) throws(ProviderError)
        -> [(node: IdentityTable.Node, item: ProviderItem)] {
        let candidates = try table { try identities.unreportedDotChildren(of: folder, keeping: seen, listedSince: mark) }
        var found: [(node: IdentityTable.Node, item: ProviderItem)] = []
        for (node, _) in candidates {
            guard let location = try table({ try identities.location(of: node) }) else { continue }
            do throws(ProviderError) {
                found.append((node, try freshItem(node, at: location)))
            } catch .notFound {
                continue  // gone from the server: pruned
            }
        }
        return found
    }

    /// The links held back from a listing, less those whose shown name a plain item of the
    /// folder has (the identity table holds exactly the folder's listing now).
    private func deliverLinks(_ links: [ProviderItem], in folder: IdentityTable.Node, into stream: ListingStreams.Stream) throws(ProviderError) {
        var shown: [ProviderItem] = []
        var refused: [String] = []
        for link in links {
            if try table({ try identities.existingNode(named: link.name, in: folder) }) != nil {
                refused.append("the link \(link.name.debugDescription.prefix(80)) (\(RcloneLinks.suffix) file) has the name of a file or folder there")
            } else {
                shown.append(link)
            }
        }
        if !stream.deliver(shown, refused: refused) { throw .cancelled }
    }

    func sighting(of entry: WebDAVEntry, _ facts: WebDAVItems.Facts) -> IdentityTable.Sighting {
        IdentityTable.Sighting(name: entry.name, isCollection: entry.properties.isCollection, fileID: entry.properties.fileID,
                               version: facts.version, size: facts.size, seconds: facts.seconds)
    }

    /// Notes whether files come with ETags, and says once when they do not, and what sitefs
    /// does instead.
    private func observe(_ entry: WebDAVEntry) {
        guard !entry.properties.isCollection else { return }
        let tagged = EntityTag.version(fromHeader: entry.properties.etag) != nil
        taggedFiles.withLock { $0 = tagged }
        guard !tagged else { return }
        sayOnce("untagged", "the server lists files without an ETag (first: \(entry.name.debugDescription.prefix(80))): "
                + "versions are size + last-modified, checked before each save, since the server cannot be asked to")
    }

    /// Whether the server lists files with an ETag, once known.
    var filesCarryTags: Bool? { taggedFiles.withLock { $0 } }

    func sayOnce(_ key: String, _ message: @autoclosure () -> String) {
        guard said.withLock({ $0.insert(key).inserted }) else { return }
        logger.warning("\(message())")
    }

    // MARK: The change feed

    /// WebDAV has no change feed (RFC 6578 sync-collection is rare and per collection): remote
    /// changes show as listings and items are revalidated after `--cache-ttl`, and a file's
    /// version on open. The feed is empty, and costs no request.
    public func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch {
        ChangeBatch(changes: [], next: PageToken("webdav"), hasMore: false)
    }

    // MARK: Identities

    /// The node and where it is, for an identifier this backend made; `notFound` for one it
    /// does not know (any more) or whose site does not match.
    func resolve(_ identifier: ItemIdentifier) throws(ProviderError) -> (IdentityTable.Node, IdentityTable.Location) {
        guard let node = IdentityTable.Node(identifier.id), let site = IdentityTable.Node(identifier.site), node > 0 else {
            throw .notFound
        }
        guard let location = try table({ try identities.location(of: node) }), location.site == site else { throw .notFound }
        return (node, location)
    }

    /// The nodes of `items` this backend made are on the disk (see `IdentityTable+Durability`).
    public func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError) {
        try table { try identities.makeDurable(items.lazy.compactMap { IdentityTable.Node($0.id) }) }
    }

    /// Runs an identity-table call; a database failure is a local I/O error.
    func table<T>(_ body: () throws -> T) throws(ProviderError) -> T {
        do { return try body() } catch { throw .localIO("identity table: \(error)") }
    }
}
