import Foundation
import SitefsProvider
import SystemPackage

/// One server page of a folder's listing, its items already in the cache.
typealias FetchedPage = (names: [String], identifiers: [ItemIdentifier], next: PageToken?)

/// The pages of one folder's listing, requested in the background up to `depth` pages ahead
/// of the reader, each as soon as the server has named it.
///
/// Listing a big folder is a chain: the next page's cursor is only known once a page has
/// come. Fetched on demand, the server's work on page n+1 waits until the kernel has read
/// every entry of page n and the daemon has cached it. So a page is got in two steps: the
/// request (`Request`: the server's answer, decoded) and the store (`Store`: into the item
/// cache, on the reader's thread). Threads request the pages ahead: the request for page
/// n+1 goes out the moment page n's answer is in, or earlier, while page n is decoded, where
/// the server names the next page before its body (`Request`'s `nextKnown`; a thread of its
/// own then requests it); whether or not the reader has come to page n yet, until `depth`
/// pages wait for the reader. A page the reader takes makes room for the next. So the chain
/// runs at the server's pace while the reader stores and reads what came, also while the
/// reader is slower than the server for a page or two (a page of `ls -l` can take the
/// reader longer than the server's answer). A reader that stops early (`ls | head`) costs
/// at most `depth` pages more than it read.
///
/// `Requested` is the answer of one request; one nobody stores is dropped, and its deinit
/// is where what it holds is let go (see `RequestedPage`).
final class PageReadAhead<Requested: Sendable>: @unchecked Sendable {
    /// A page's request; `nextKnown` is told the next page's token if the server names it
    /// before the answer is decoded (it is called on the requesting thread, during the call).
    typealias Request = @Sendable (PageToken?, _ nextKnown: (PageToken) -> Void) throws(Errno) -> Requested
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
    /// At most `depth`. A slot without an answer is being requested by a thread now.
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
        if let token, let answered = takeRequestedAhead(token) {
            requested = answered
        } else {
            requested = try request(token) { [self] next in requestAhead(from: next) }
        }
        if let next = nextToken(requested) { requestAhead(from: next) }
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

    /// Starts requesting from `next`, the page after the reader's, unless the pages ahead
    /// are being requested already: a chain that stopped at `depth` or behind a failure goes
    /// on from its last answer; pages requested ahead of another position (the reader
    /// started over, or a server's early token that its page did not keep) are dropped.
    private func requestAhead(from next: PageToken) {
        condition.lock()
        defer { condition.unlock() }
        if let first = ahead.first, first.token != next { ahead.removeAll() }
        guard !ahead.contains(where: { $0.result == nil }) else { return }  // the chain goes on by itself
        var from = next
        if let last = ahead.last {
            // A failed page is requested again by the reader, which reports the failure.
            guard case .success(let answer)? = last.result, let after = nextToken(answer) else { return }
            from = after
        }
        guard ahead.count < Self.depth, !ahead.contains(where: { $0.token == from }) else { return }
        startChain(at: from)
    }

    /// Adds the slot for `token` and a thread that requests it and the pages after it.
    /// Called with `condition` held.
    private func startChain(at token: PageToken) {
        ahead.append((token, nil))
        let thread = Thread { [self] in requestChain(from: token) }
        thread.name = "sitefs-list-ahead"
        thread.start()
    }

    /// Requests the page `token` names, then each next one while there is room ahead of the
    /// reader. Runs on its own thread; ends when the listing ends, a request fails, `depth`
    /// pages wait, the reader dropped the page in flight, or the next page went to a thread
    /// of its own while this one was decoded.
    private func requestChain(from token: PageToken) {
        var token = token
        while true {
            var handedOn = false
            let result: Result<Requested, Errno>
            do throws(Errno) {
                let current = token
                result = .success(try request(token) { [self] next in handedOn = handOn(next, after: current) })
            } catch {
                result = .failure(error)
            }
            condition.lock()
            defer { condition.unlock() }
            guard let index = ahead.firstIndex(where: { $0.token == token }) else { return }
            ahead[index].result = result
            condition.broadcast()
            guard !handedOn, case .success(let answer) = result, ahead.count < Self.depth, let next = nextToken(answer),
                  !ahead.contains(where: { $0.token == next }) else { return }
            ahead.append((next, nil))
            token = next
        }
    }

    /// The server named `next` while page `token` is still being decoded: requested now on a
    /// thread of its own when there is room and the reader still wants `token`'s page.
    /// Whether it was (the chain of `token` then ends with `token`).
    private func handOn(_ next: PageToken, after token: PageToken) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard ahead.contains(where: { $0.token == token }), ahead.count < Self.depth,
              !ahead.contains(where: { $0.token == next }) else { return false }
        startChain(at: next)
        return true
    }
}
