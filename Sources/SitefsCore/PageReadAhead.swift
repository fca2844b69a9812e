import Foundation
import SitefsProvider
import SystemPackage

/// One server page of a folder's listing, its items already in the cache.
typealias FetchedPage = (names: [String], identifiers: [ItemIdentifier], next: PageToken?)

/// The pages of one folder's listing, requested in the background up to `depth` pages ahead
/// of the reader, one after another as each page's cursor comes from the server.
///
/// Listing a big folder is a chain: the next page's cursor is only known once a page has
/// come. Fetched on demand, the server's work on page n+1 waits until the kernel has read
/// every entry of page n and the daemon has cached it. So a page is got in two steps: the
/// request (`Request`: the server's answer, decoded) and the store (`Store`: into the item
/// cache, on the reader's thread). A thread requests the pages ahead: the request for page
/// n+1 goes out the moment page n's answer is in, whether or not the reader has come to
/// page n yet, until `depth` pages wait for the reader; a page the reader takes makes room
/// for the next. So the chain runs at the server's pace while the reader stores and reads
/// what came, also while the reader is slower than the server for a page or two (a page
/// of `ls -l` can take the reader longer than the server's answer). A reader that stops
/// early (`ls | head`) costs at most `depth` pages more than it read.
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

    /// Pages requested ahead of the reader at most (answered and not taken, or in flight).
    static var depth: Int { 2 }

    /// A page requested ahead: the token it was requested with, and its answer once known.
    private typealias Slot = (token: PageToken, result: Result<Requested, Errno>?)

    private let request: Request
    private let store: Store
    private let nextToken: NextToken
    /// Guards `ahead`. A leaf: requests and stores run with it released (`nextToken` only
    /// reads an answer).
    private let condition = NSCondition()
    /// The pages requested ahead, in the listing's order: the first is the reader's next.
    /// At most `depth`. A slot without an answer is the one the chain is requesting now.
    private var ahead: [Slot] = []

    init(request: @escaping Request, store: @escaping Store, nextToken: @escaping NextToken) {
        self.request = request
        self.store = store
        self.nextToken = nextToken
    }

    /// The page after `token` (the first page for nil), stored: the one requested ahead when
    /// it is that page and its request succeeded, otherwise requested now on the calling
    /// thread, so a failure is reported by the request that needs the page. The pages after
    /// it are requested ahead before this one is stored.
    func page(after token: PageToken?) throws(Errno) -> FetchedPage {
        let requested: Requested
        if let token, let answered = takeRequestedAhead(token) { requested = answered } else { requested = try request(token) }
        requestAhead(after: requested)
        return store(requested)
    }

    /// Waits for the page requested ahead after `token` and takes it; nil when none is being
    /// requested for that token, its request failed, or it took longer than `longestWait`.
    /// The pages before it are dropped: the reader has gone past them.
    private func takeRequestedAhead(_ token: PageToken) -> Requested? {
        let deadline = Date.now.addingTimeInterval(Double(Self.longestWait.components.seconds))
        condition.lock()
        defer { condition.unlock() }
        while let slot = ahead.first(where: { $0.token == token }), slot.result == nil {
            guard condition.wait(until: deadline) else { break }
        }
        guard let index = ahead.firstIndex(where: { $0.token == token }) else { return nil }
        let result = ahead[index].result
        ahead.removeSubrange(...index)  // an answer still to come for it is dropped when it comes
        return try? result?.get()
    }

    /// Starts requesting the pages after `requested` (the page the reader has now), unless
    /// they are being requested already: a chain that stopped at `depth` or behind a failure
    /// goes on from its last answer; pages requested ahead of another position (the reader
    /// started over) are dropped.
    private func requestAhead(after requested: Requested) {
        condition.lock()
        defer { condition.unlock() }
        guard let next = nextToken(requested) else { return }
        if let first = ahead.first, first.token != next { ahead.removeAll() }
        guard !ahead.contains(where: { $0.result == nil }) else { return }  // the chain goes on by itself
        let from: PageToken
        if let last = ahead.last {
            // A failed page is requested again by the reader, which reports the failure.
            guard case .success(let answer)? = last.result, let after = nextToken(answer) else { return }
            from = after
        } else {
            from = next
        }
        guard ahead.count < Self.depth else { return }
        ahead.append((from, nil))
        let thread = Thread { [self] in requestChain(from: from) }
        thread.name = "sitefs-list-ahead"
        thread.start()
    }

    /// Requests the page `token` names, then each next one while there is room ahead of the
    /// reader. Runs on its own thread; ends when the listing ends, a request fails, `depth`
    /// pages wait, or the reader dropped the page in flight.
    private func requestChain(from token: PageToken) {
        var token = token
        while true {
            let result: Result<Requested, Errno>
            do throws(Errno) { result = .success(try request(token)) } catch { result = .failure(error) }
            condition.lock()
            defer { condition.unlock() }
            guard let index = ahead.firstIndex(where: { $0.token == token }) else { return }
            ahead[index].result = result
            condition.broadcast()
            guard case .success(let answer) = result, ahead.count < Self.depth, let next = nextToken(answer),
                  !ahead.contains(where: { $0.token == next }) else { return }
            ahead.append((next, nil))
            token = next
        }
    }
}
