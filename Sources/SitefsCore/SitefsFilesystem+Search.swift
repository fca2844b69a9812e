import SitefsAPI
import SitefsProvider
import SitefsStore
import SystemPackage

/// Searching from the mount: what a search folder (`MOUNT/.search/QUERY/`) and
/// `sitefs search` show. The server searches where it can (names and document text, over
/// everything the user may see); otherwise, or while it cannot be reached, the mount
/// searches names over the folders it has listed, and says so.
extension SitefsFilesystem {
    /// Hits shown at most per search (the server's best first).
    static let maximumSearchHits = 500
    /// Hits asked of the server per request.
    static let searchPageSize = 100

    /// A search folder's answer: from the last few seconds, or asked now.
    func searchOutcome(_ name: String, fresh: Bool) -> SearchOutcome {
        let now = configuration.clock.now
        if !fresh, let known = virtual.search(name, freshAt: now) { return known }
        let outcome = runSearch(name, at: now)
        virtual.remember(outcome, of: name)
        return outcome
    }

    private func runSearch(_ name: String, at now: ContinuousClock.Instant) -> SearchOutcome {
        let folder: SearchFolderName
        do {
            folder = try SearchFolderName(parsing: name)
        } catch {
            return .failed(error.message, at: now)
        }
        let sites: ItemCache.Listing
        do {
            sites = try listing(of: nil)
        } catch {
            return .failed("the sites cannot be listed: \(error)", at: now)
        }
        var site: ItemIdentifier?
        if let siteName = folder.siteName {
            guard let identifier = sites.identifier(named: siteName) else {
                return .failed("this mount has no site named \(siteName.debugDescription)", at: now)
            }
            site = identifier
        }
        let query = SearchQuery(words: folder.words, site: site, fileExtension: folder.fileExtension,
                                modifiedSince: folder.modifiedSince)
        guard case .server = backend.searchSupport else {
            return listedNamesSearch(query, sites: sites, at: now,
                                     note: "searched names only, over the folders this mount has listed: this server does not search")
        }
        if isOffline {
            return listedNamesSearch(query, sites: sites, at: now,
                                     note: "searched names only, over the folders this mount has listed: the server cannot be reached")
        }
        do throws(ProviderError) {
            return try serverSearch(query, sites: sites, at: now)
        } catch .refused(501, _, _) {
            // An older server, without search.
            return listedNamesSearch(query, sites: sites, at: now,
                                     note: "searched names only, over the folders this mount has listed: this server does not search")
        } catch where error.isTransient {
            logger.failed("search", error)
            return listedNamesSearch(query, sites: sites, at: now,
                                     note: "searched names only, over the folders this mount has listed: the server cannot be reached")
        } catch {
            logger.failed("search", error)
            return .failed(error.description, at: now)
        }
    }

    /// The server's hits, page by page up to `maximumSearchHits`, each stored in the cache
    /// (so opening one needs no further request) and placed on the mount by its path.
    private func serverSearch(_ query: SearchQuery, sites: ItemCache.Listing, at now: ContinuousClock.Instant)
        throws(ProviderError) -> SearchOutcome {
        var hits: [SearchFolderHit] = []
        var token: PageToken?
        // Bounded by the hits kept: a server that keeps answering "next" is not followed on.
        for _ in 0..<(Self.maximumSearchHits / Self.searchPageSize) {
            let read = cache.beginRead()
            defer { cache.endRead(read) }
            let page = try backend.search(query, after: token, limit: Self.searchPageSize)
            for reason in page.refused { logger.warning("search: a hit is left out: \(reason)") }
            let items = page.hits.map { sync.view($0.item) }
            cache.store(items, asOf: read)
            for (hit, item) in zip(page.hits, items) {
                guard let path = mountPath(of: item, ancestors: hit.ancestors, sites: sites) else { continue }
                hits.append(SearchFolderHit(item: item, path: path, matched: hit.matched, snippet: hit.snippet))
            }
            token = page.next
            guard token != nil else { break }
        }
        SearchEntryNames.assign(&hits)
        let note = token != nil ? "showing the first \(hits.count) results; narrow the search for the rest" : nil
        return SearchOutcome(hits: hits, coverage: .server, note: note, error: nil, madeAt: now)
    }

    /// Where a server hit is on the mount: its site's name as the root shows it, then the
    /// folders the server named, then its own name. nil for a hit outside the mount's sites.
    private func mountPath(of item: ProviderItem, ancestors: [(identifier: ItemIdentifier, name: String)],
                           sites: ItemCache.Listing) -> [String]? {
        if item.identifier.isSite {
            return sites.names(of: item.identifier).map { [$0] }
        }
        guard let site = ancestors.first, site.identifier.isSite, let siteName = sites.names(of: site.identifier) else {
            return nil
        }
        return [siteName] + ancestors.dropFirst().map(\.name) + [item.name]
    }

    /// Names matching every word, over the items this mount knows (listed, or made here),
    /// newest first.
    private func listedNamesSearch(_ query: SearchQuery, sites: ItemCache.Listing, at now: ContinuousClock.Instant,
                                   note: String) -> SearchOutcome {
        let words = SearchFolding.fold(query.words).split(whereSeparator: { $0.isWhitespace }).map(String.init)
        let suffix = query.fileExtension.map { "." + $0 }
        let matches = cache.items(limit: Self.maximumSearchHits * 4) { item in
            guard !item.identifier.isSite else { return false }
            if let site = query.site, item.identifier.site != site.site { return false }
            if let since = query.modifiedSince, item.modified < since { return false }
            if let suffix, !(item.kind == .file && item.name.lowercased().hasSuffix(suffix)) { return false }
            let name = SearchFolding.fold(item.name)
            return words.allSatisfy { name.contains($0) }
        }
        var hits: [SearchFolderHit] = []
        for item in matches.sorted(by: { $0.modified > $1.modified }) {
            guard hits.count < Self.maximumSearchHits else { break }
            guard let chain = item.parent.flatMap(folderChain(of:)), let siteName = sites.names(of: chain.links[0].identifier)
            else { continue }
            let path = [siteName] + chain.links.dropFirst().map(\.name) + [item.name]
            hits.append(SearchFolderHit(item: sync.view(item), path: path, matched: .name, snippet: nil))
        }
        SearchEntryNames.assign(&hits)
        return SearchOutcome(hits: hits, coverage: .listedNames, note: note, error: nil, madeAt: now)
    }
}

extension ItemCache.Listing {
    /// The name an identifier has in this listing.
    func names(of identifier: ItemIdentifier) -> String? {
        identifiers.firstIndex(of: identifier).map { names[$0] }
    }
}
