import SitefsProvider
import SitefsStore
import SystemPackage

/// A folder's listing pages as an open directory and `listing(of:)` get them.
typealias ListingPages = PageReadAhead<RequestedPage>

/// One server page as the backend answered it, not yet in the item cache. The read
/// registered for it (`ItemCache.beginRead`) stays open until the page is stored, so an
/// item changed here meanwhile keeps its newer state; it ends when the page goes, stored or
/// dropped unread (a reader that stopped early, a page requested ahead for nobody).
final class RequestedPage: Sendable {
    let page: Page
    let read: ServerRead
    private let cache: ItemCache

    init(page: Page, read: ServerRead, cache: ItemCache) {
        self.page = page
        self.read = read
        self.cache = cache
    }

    deinit { cache.endRead(read) }
}

extension SitefsFilesystem {
    /// The pages of a folder's listing (or of the sites), each next one requested ahead.
    func pageReadAhead(of folder: ItemIdentifier?) -> ListingPages {
        ListingPages(request: { [self] token, nextKnown throws(Errno) in try requestPage(of: folder, after: token, nextKnown: nextKnown) },
                     store: { [self] requested in storePage(requested, of: folder) },
                     nextToken: { $0.page.next })
    }

    /// One server page of a folder (or of the sites), as the server answered it; `nextKnown`
    /// hears the next page's token first where the server names it early.
    func requestPage(of folder: ItemIdentifier?, after token: PageToken?,
                     nextKnown: (PageToken) -> Void = { _ in }) throws(Errno) -> RequestedPage {
        let read = cache.beginRead()
        do throws(ProviderError) {
            let page: Page
            if let folder {
                page = try backend.children(of: folder, after: token, limit: configuration.pageSize, nextKnown: nextKnown)
            } else {
                page = try backend.sites(after: token, limit: configuration.pageSize)
            }
            return RequestedPage(page: page, read: read, cache: cache)
        } catch {
            cache.endRead(read)
            throw handle(error, "list \(folder?.description ?? "sites")", dropping: folder)
        }
    }

    /// Stores a page's items in the cache, as this mount sees them (its own renames and
    /// deletes not on the server yet applied). The items share their common strings
    /// (`SharedItemStrings`) before the cache and the listing take them.
    func storePage(_ requested: RequestedPage, of folder: ItemIdentifier?) -> FetchedPage {
        for reason in requested.page.refused {
            logger.warning("list \(folder?.description.debugDescription ?? "sites"): an entry is left out: \(reason)")
        }
        let items = SharedItemStrings.sharing(sync.view(page: requested.page.items, of: folder))
        cache.store(items, asOf: requested.read)
        return (items.map(\.name), items.map(\.identifier), requested.page.next)
    }
}
