import Foundation
import SitefsProvider

/// Serves a collection's listing to the core page by page while its PROPFIND response is
/// still arriving.
///
/// A WebDAV server answers a listing in one multistatus body, however large the collection;
/// the core asks for pages (and lists a 100,000-entry folder in bounded memory by letting
/// the kernel pull them). So each listing runs on its own thread (a *producer*: the request,
/// the streaming parser, identities, item checks) into a buffer, and each page call takes
/// the next `limit` entries from it as soon as they are there, with a token naming the
/// listing and the position. The buffer holds what arrived and was not yet asked for: the
/// core's page read-ahead keeps it short, and a producer far ahead of its reader waits, then
/// gives up (`bufferedLimit`, `idleLifetime`).
///
/// A token whose listing is gone (finished, expired, evicted, from before a remount) is
/// served by a new listing that skips to the position: slower, never wrong about what the
/// server has now.
final class ListingStreams: @unchecked Sendable {
    /// Guards every field of every stream. A leaf: nothing else is locked while it is held,
    /// and producers call out (network, identity table) with it released.
    private let condition = NSCondition()
    private var streams: [UInt64: Stream] = [:]
    private var nextID: UInt64 = 1
    /// How long a page call waits for its entries before the listing counts as stalled.
    private let pageWait: TimeInterval
    /// Listings kept at once; the least recently used goes first.
    static let maximumStreams = 16
    /// A listing nobody asked a page of for this long is abandoned.
    static let idleLifetime: TimeInterval = 60
    /// Entries a producer may hold ahead of its reader before it waits for one: some twenty
    /// pages at the core's usual size, so the reader never waits on a producer that could
    /// have gone on, while a folder of 100,000 entries holds about a megabyte here, not the
    /// fifth of itself a deeper buffer filled to while `ls -f` caught up.
    static let bufferedLimit = 4_096

    init(pageWait: TimeInterval) {
        self.pageWait = pageWait
    }

    /// One listing in flight.
    final class Stream: @unchecked Sendable {
        fileprivate let id: UInt64
        /// Arrived and not yet served; `buffer[0]` is entry number `served`.
        fileprivate var buffer: [ProviderItem] = []
        fileprivate var refused: [String] = []
        fileprivate var served = 0
        /// Entries still to drop as they arrive (a listing restarted at a position).
        fileprivate var skip: Int
        /// The last page served, for a caller asking the same token again (a retry).
        fileprivate var lastPage: (position: Int, page: Page)?
        fileprivate var finished = false
        fileprivate var failure: ProviderError?
        fileprivate var abandoned = false
        fileprivate var lastUsed = Date()
        fileprivate weak var owner: ListingStreams?

        fileprivate init(id: UInt64, skip: Int) {
            self.id = id
            self.skip = skip
        }

        /// Whether nobody wants the rest (asked from the producer's transfer).
        var isAbandoned: Bool {
            guard let owner else { return true }
            owner.condition.lock()
            defer { owner.condition.unlock() }
            return abandoned
        }

        /// Hands entries (and reasons for left-out ones) to the reader; false when the
        /// listing was abandoned and the producer should stop.
        @discardableResult
        func deliver(_ items: [ProviderItem], refused: [String]) -> Bool {
            guard let owner else { return false }
            owner.condition.lock()
            defer { owner.condition.unlock() }
            var items = items[...]
            let dropped = min(skip, items.count)
            skip -= dropped
            items = items.dropFirst(dropped)
            buffer.append(contentsOf: items)
            self.refused.append(contentsOf: refused)
            owner.condition.broadcast()
            let deadline = Date().addingTimeInterval(ListingStreams.idleLifetime)
            while buffer.count > ListingStreams.bufferedLimit, !abandoned {
                if !owner.condition.wait(until: deadline) { abandoned = true }
            }
            return !abandoned
        }

        /// The listing is complete (`failure` nil) or failed.
        func finish(_ failure: ProviderError?) {
            guard let owner else { return }
            owner.condition.lock()
            defer { owner.condition.unlock() }
            finished = true
            self.failure = failure
            owner.condition.broadcast()
        }
    }

    /// Starts a listing: `produce` runs on its own thread, feeding the stream it is given.
    /// `skip` entries are dropped first (a restart at a position).
    func start(skipping skip: Int = 0, produce: @escaping @Sendable (Stream) -> Void) -> Stream {
        condition.lock()
        let stream = Stream(id: nextID, skip: skip)
        stream.owner = self
        stream.served = skip
        nextID += 1
        evictIdle()
        streams[stream.id] = stream
        condition.unlock()
        let thread = Thread { produce(stream) }
        thread.name = "sitefs-webdav-listing"
        thread.start()
        return stream
    }

    /// The stream and position a token names, if that listing is still here.
    func stream(for token: PageToken) -> (Stream?, position: Int)? {
        let parts = token.rawValue.split(separator: ".")
        guard parts.count == 2, parts[0].hasPrefix("s"), let id = UInt64(parts[0].dropFirst()), let position = Int(parts[1]),
              position >= 0
        else { return nil }
        condition.lock()
        defer { condition.unlock() }
        return (streams[id], position)
    }

    /// The next page of `stream` at `position`: up to `limit` entries, once that many have
    /// arrived or the listing is complete.
    func page(of stream: Stream, at position: Int, limit: Int) throws(ProviderError) -> Page {
        condition.lock()
        defer { condition.unlock() }
        stream.lastUsed = Date()
        if let last = stream.lastPage, last.position == position { return last.page }
        guard position == stream.served else {
            throw .invalidResponse("listing asked out of order (at \(position), served \(stream.served))")
        }
        let deadline = Date().addingTimeInterval(pageWait)
        while stream.buffer.count < limit, !stream.finished, !stream.abandoned {
            guard condition.wait(until: deadline) else {
                abandon(stream)
                throw .unreachable("the listing stalled: no entries for \(Int(pageWait)) s")
            }
        }
        if let failure = stream.failure {
            streams[stream.id] = nil
            throw failure
        }
        guard !stream.abandoned else { throw .unreachable("the listing was abandoned") }
        let count = min(limit, stream.buffer.count)
        let items = Array(stream.buffer.prefix(count))
        stream.buffer.removeFirst(count)
        stream.served += count
        let done = stream.finished && stream.buffer.isEmpty
        let page = Page(items: items, next: done ? nil : PageToken("s\(stream.id).\(stream.served)"), refused: stream.refused)
        stream.refused = []
        stream.lastPage = (position, page)
        if done { streams[stream.id] = nil }
        condition.broadcast()  // a producer waiting for room
        return page
    }

    /// Listings in flight (tests: none is left behind).
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return streams.count
    }

    /// Drops listings idle too long, and the least recently used beyond the limit. Called
    /// with the lock held.
    private func evictIdle() {
        let now = Date()
        for stream in streams.values where now.timeIntervalSince(stream.lastUsed) > Self.idleLifetime { abandon(stream) }
        while streams.count >= Self.maximumStreams, let oldest = streams.values.min(by: { $0.lastUsed < $1.lastUsed }) {
            abandon(oldest)
        }
    }

    /// Called with the lock held.
    private func abandon(_ stream: Stream) {
        stream.abandoned = true
        streams[stream.id] = nil
        condition.broadcast()
    }
}
