import Foundation
import SitefsProvider
import SystemPackage

/// One server page of a folder's listing, its items already in the cache.
typealias FetchedPage = (names: [String], identifiers: [ItemIdentifier], next: PageToken?)

/// The pages of one folder's listing, each next page requested in the background as soon as
/// the page before it has come from the server.
///
/// Listing a big folder is a chain: the next page's cursor is only known once a page has
/// come. Fetched on demand, the server's work on page n+1 waits until the kernel has read
/// every entry of page n and the daemon has cached it. So a page is got in two steps: the
/// request (`Request`: the server's answer, decoded) and the store (`Store`: into the item
/// cache, on the reader's thread). The request for page n+1 goes out the moment page n's
/// answer is in, before page n is stored, and the chain runs at the server's pace while the
/// reader stores and reads what came. At most one page is requested ahead per listing, so a
/// reader that stops early (`ls | head`) costs one page more than it read.
///
/// `Requested` is the answer of one request; one nobody stores is dropped, and its deinit
/// is where what it holds is let go (see `RequestedPage`).
final class PageReadAhead<Requested: Sendable>: @unchecked Sendable {
    typealias Request = @Sendable (PageToken?) throws(Errno) -> Requested
    typealias Store = @Sendable (Requested) -> FetchedPage
    typealias NextToken = @Sendable (Requested) -> PageToken?

    /// A backstop only: the request itself is bounded by the HTTP client's timeouts. Past it
    /// the reader stops waiting and requests the page itself.
    static var longestWait: Duration { .seconds(180) }

    private let request: Request
    private let store: Store
    private let nextToken: NextToken
    /// Guards `ahead`. A leaf: requests and stores run with it released.
    private let condition = NSCondition()
    /// The page being requested ahead (the one after `token`), and its answer once known.
    private var ahead: (token: PageToken, result: Result<Requested, Errno>?)?

    init(request: @escaping Request, store: @escaping Store, nextToken: @escaping NextToken) {
        self.request = request
        self.store = store
        self.nextToken = nextToken
    }

    /// The page after `token` (the first page for nil), stored: the one requested ahead when
    /// it is that page and its request succeeded, otherwise requested now on the calling
    /// thread, so a failure is reported by the request that needs the page. The request for
    /// the page after it starts before this one is stored.
    func page(after token: PageToken?) throws(Errno) -> FetchedPage {
        let requested: Requested
        if let token, let answered = takeRequestedAhead(token) { requested = answered } else { requested = try request(token) }
        if let next = nextToken(requested) { startRequesting(after: next) }
        return store(requested)
    }

    /// Waits for the page requested ahead after `token` and takes it; nil when none is being
    /// requested for that token, its request failed, or it took longer than `longestWait`.
    private func takeRequestedAhead(_ token: PageToken) -> Requested? {
        let deadline = Date.now.addingTimeInterval(Double(Self.longestWait.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while let pending = ahead, pending.token == token, pending.result == nil {
            guard condition.wait(until: deadline) else { return nil }
        }
        guard let done = ahead, done.token == token, let result = done.result else { return nil }
        ahead = nil
        return try? result.get()
    }

    private func startRequesting(after token: PageToken) {
        condition.lock()
        defer { condition.unlock() }
        // Another reader of the same listing may have started it already.
        guard ahead?.token != token else { return }
        ahead = (token, nil)  // an answer not taken is dropped here
        let thread = Thread { [self] in
            let result: Result<Requested, Errno>
            do throws(Errno) { result = .success(try request(token)) } catch { result = .failure(error) }
            condition.lock()
            if ahead?.token == token { ahead?.result = result }
            condition.broadcast()
            condition.unlock()
        }
        thread.name = "sitefs-list-ahead"
        thread.start()
    }
}
