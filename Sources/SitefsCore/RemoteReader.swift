import Foundation
import SitefsProvider

/// Serves a read-only open without a local copy: ranged requests as the reader goes, so
/// `head -c 4096` of a huge file fetches kilobytes while `cat` streams in large requests.
/// The version is pinned at open, so a reader keeps seeing the version it opened even if
/// the server gets a newer one meanwhile.
///
/// Each request fills a window of memory in order, and a read is served as soon as the
/// bytes it asks for have arrived, not when the whole window has: so windows can be large
/// (few requests, which the server answers more cheaply than many small ones) without a
/// reader waiting longer for its first bytes. Reads are lent straight out of the window
/// (`lend`), so the bytes are not copied again on their way to the kernel.
///
/// The kernel reads ahead on several threads at once and out of order, so "sequential" is
/// judged by distance from the furthest byte asked for, not by exact succession: reads
/// near it double the window (up to a limit), a far one resets it. A sequential reader has
/// the next window fetched in the background while it reads the one before (up to
/// `aheadWindows` fetches at once), so the transfer does not stall between requests. At
/// most a few windows are kept.
final class RemoteReader: @unchecked Sendable {
    let identifier: ItemIdentifier
    let version: String
    let size: Int64
    private let backend: any DocumentBackend
    private let maximumWindow: Int
    private static let initialWindow = 128 << 10
    /// Most finished windows kept: the one the reader is in, up to two finished ahead of it
    /// and the last one it passed (for the kernel's out-of-order read-ahead, or a program
    /// reading a header again). See `trimWindows`.
    private static let keptWindows = 4
    private static let aheadWindows = 2
    /// Memory of dropped windows kept for the next fetches: fresh memory for every window
    /// cost a fifth of the daemon's CPU in `cat` (page faults zeroing pages).
    private static let spareStorages = 1

    /// Memory a window is fetched into, reused by later windows once its window is gone.
    /// (Transparent huge pages were tried: in an A/B of 8 cold `cat`s each the median gained
    /// 4%, but one run in eight took twice the daemon's CPU, so the mean was worse.)
    private final class Storage: @unchecked Sendable {  // see Window for who touches which bytes
        let bytes: UnsafeMutableRawBufferPointer

        init(capacity: Int) {
            bytes = .allocate(byteCount: capacity, alignment: 64)
        }

        deinit { bytes.deallocate() }
    }

    /// One ranged request's bytes. Only the fetching thread writes, and only beyond
    /// `filled`; readers read only below it; `filled` moves under `condition`, so a reader
    /// sees the bytes it covers. A window whose fetch failed leaves `windows` at once, with
    /// its `error` kept for the read that started it.
    private final class Window: @unchecked Sendable {  // guarded as described above
        let range: ClosedRange<Int64>
        let storage: Storage
        // Guarded by the reader's `condition`:
        var filled = 0
        var fetching = true
        var error: ProviderError?
        /// The lowest last byte (offset in the file) a waiting read needs, if any read waits:
        /// the fetch wakes readers only once that has arrived, not at every piece.
        var awaited: Int64?
        /// Reads lent out of this window right now: its storage is not reused until they end.
        var lends = 0
        var dropped = false

        init(range: ClosedRange<Int64>, storage: Storage) {
            self.range = range
            self.storage = storage
        }

        func covers(_ wanted: ClosedRange<Int64>) -> Bool {
            range.lowerBound <= wanted.lowerBound && wanted.upperBound <= range.upperBound
        }

        func hasArrived(_ wanted: ClosedRange<Int64>) -> Bool {
            wanted.upperBound - range.lowerBound < Int64(filled)
        }
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var windows: [Window] = []
    private var spares: [Storage] = []
    private var window = RemoteReader.initialWindow
    /// End of the furthest fetch started: reads near it continue the stream.
    private var streamEnd: Int64 = 0
    /// Last byte of the latest read: where the reader is, for `trimWindows`.
    private var lastRead: Int64 = 0
    private var closed = false

    init(identifier: ItemIdentifier, version: String, size: Int64, backend: any DocumentBackend, maximumWindow: Int) {
        self.identifier = identifier
        self.version = version
        self.size = size
        self.backend = backend
        self.maximumWindow = max(maximumWindow, Self.initialWindow)
    }

    /// Reads by copying into `buffer` (see `lend` for the copy-free way).
    func read(offset: Int64, count: Int, into buffer: UnsafeMutableRawBufferPointer) throws(ProviderError) -> Int {
        let lease = try lend(offset: offset, count: count)
        let copied = lease.bytes.count
        buffer.copyMemory(from: lease.bytes)
        lease.end()
        return copied
    }

    /// The bytes at `offset` (at most `count`, fewer only at the end of the file), lent out
    /// of the window that holds them once they have arrived.
    func lend(offset: Int64, count: Int) throws(ProviderError) -> ReadLease {
        guard offset < size, count > 0 else { return ReadLease(bytes: UnsafeRawBufferPointer(start: nil, count: 0)) {} }
        let wanted = offset...(offset + min(Int64(count), size - offset) - 1)
        condition.lock()
        defer { condition.unlock() }
        var ownFetch: Window?
        while true {
            if let found = windows.last(where: { $0.covers(wanted) }) {
                // A read of a window it did not start itself is the stream going on: only
                // then fetch ahead (`head -c 4096` fetches one small window, nothing more).
                if found.hasArrived(wanted) { return lease(wanted, from: found, prefetching: found !== ownFetch) }
                // Still coming: the fetch ends within the backend's timeouts, failed or not.
                found.awaited = min(found.awaited ?? .max, wanted.upperBound)
                condition.wait()
                continue
            }
            // This read's own fetch failed: its error is the read's. Reads that were waiting
            // on someone else's failed fetch come here and fetch for themselves.
            if let error = ownFetch?.error { throw error }
            ownFetch = startFetch(plannedFetch(for: wanted))
        }
    }

    /// The handle is closed: fetches still running stop at their next piece.
    func close() {
        condition.lock()
        closed = true
        condition.unlock()
    }

    /// Pins the window and lends the wanted bytes. Call with `condition` locked.
    private func lease(_ wanted: ClosedRange<Int64>, from window: Window, prefetching: Bool) -> ReadLease {
        window.lends += 1
        lastRead = wanted.upperBound
        if prefetching { prefetch(after: wanted) }
        let start = Int(wanted.lowerBound - window.range.lowerBound)
        let bytes = UnsafeRawBufferPointer(rebasing: window.storage.bytes[start..<(start + wanted.count)])
        return ReadLease(bytes: bytes) { [self] in
            condition.lock()
            window.lends -= 1
            if window.dropped && window.lends == 0 { recycle(window.storage) }
            condition.unlock()
        }
    }

    /// Chooses the window for a read nothing covers. Call with `condition` locked.
    private func plannedFetch(for range: ClosedRange<Int64>) -> ClosedRange<Int64> {
        let sequential = range.lowerBound >= streamEnd - Int64(window) && range.lowerBound <= streamEnd.saturatingAdd(Int64(window))
        window = sequential ? min(window * 2, maximumWindow) : Self.initialWindow
        let end = min(size, range.lowerBound.saturatingAdd(Int64(max(window, range.count)))) - 1
        streamEnd = sequential ? max(streamEnd, end + 1) : end + 1
        return range.lowerBound...end
    }

    /// Starts the next window in the background once less than a window of the stream is
    /// left ahead of the read, with fewer than `aheadWindows` fetches running: a window is
    /// always on its way while the reader goes through the one before it. (Counting windows
    /// ahead by the doubled size let the stream run far ahead early on, and what ran ahead
    /// was dropped before the reader got there and fetched again.) Call with `condition` locked.
    private func prefetch(after range: ClosedRange<Int64>) {
        guard !closed, streamEnd < size, streamEnd - range.upperBound <= Int64(self.window),
              windows.count(where: { $0.fetching }) < Self.aheadWindows else { return }
        self.window = min(self.window * 2, maximumWindow)
        let fetch = streamEnd...(min(size, streamEnd.saturatingAdd(Int64(self.window))) - 1)
        streamEnd = fetch.upperBound + 1
        startFetch(fetch)
    }

    /// Adds a window for `range` and fetches it on a thread of its own. Trims first, so the
    /// windows the reader has passed since the last fetch finished hand their memory to this
    /// one instead of it taking fresh memory (page faults: a cold `cat` of 256 MiB took
    /// 29-33k, now 17k, and the daemon's CPU fell by a fifth). Call with `condition` locked.
    @discardableResult
    private func startFetch(_ range: ClosedRange<Int64>) -> Window {
        trimWindows()
        let count = range.count
        let storage = spares.firstIndex(where: { $0.bytes.count >= count }).map { spares.remove(at: $0) }
            ?? Storage(capacity: count)
        let window = Window(range: range, storage: storage)
        windows.append(window)
        let thread = Thread { [self] in fetch(window) }
        thread.name = "sitefs-read"
        thread.start()
        return window
    }

    /// Fills the window as the response arrives, publishing each piece (waking readers only
    /// when what one waits for has come); on failure the window goes, with its error kept
    /// for the read that started it, and the reads waiting on it decide again.
    private func fetch(_ window: Window) {
        let storage = window.storage
        let capacity = window.range.count
        let cursor = FillCursor()
        let receive: @Sendable (UnsafeRawBufferPointer) throws -> Void = { [self] piece in
            let start = cursor.written
            guard start + piece.count <= capacity else { throw ProviderError.invalidResponse("range overflow") }
            UnsafeMutableRawBufferPointer(rebasing: storage.bytes[start..<(start + piece.count)]).copyMemory(from: piece)
            cursor.written += piece.count
            condition.lock()
            defer { condition.unlock() }
            window.filled = cursor.written
            if let awaited = window.awaited, window.hasArrived(window.range.lowerBound...awaited) {
                window.awaited = nil
                condition.broadcast()
            }
            if closed { throw CancellationError() }
        }
        var error: ProviderError?
        do throws(ProviderError) {
            let outcome = try backend.fetchContent(of: identifier, version: version, range: window.range, ifNoneMatch: nil,
                                                   into: .pieces(limit: capacity, receive: receive))
            guard case .fetched = outcome, cursor.written == capacity else {
                throw .invalidResponse("short range response for \(identifier)")
            }
        } catch let failure {
            error = failure
        }
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        window.fetching = false
        if let error {
            window.error = error
            drop(window)
        }
        trimWindows()
    }

    /// Drops the finished windows the reader has passed but the last, then, while more than
    /// `keptWindows` are finished, the one farthest from the reader: memory stays bounded
    /// whatever the reads do, and the window a reader is in stays while windows ahead of it
    /// finish. (Keeping just the newest two dropped it: the reads that followed looked like
    /// a seek and fetched about 28 MiB of a 256 MiB `cat` twice.) Call with `condition` locked.
    private func trimWindows() {
        let passed = windows.filter { !$0.fetching && $0.range.upperBound < lastRead }
        for window in passed.sorted(by: { $0.range.upperBound < $1.range.upperBound }).dropLast() { drop(window) }
        func distance(_ window: Window) -> Int64 {
            window.range.contains(lastRead) ? 0 : min(abs(window.range.lowerBound - lastRead), abs(window.range.upperBound - lastRead))
        }
        var finished = windows.filter { !$0.fetching }
        while finished.count > Self.keptWindows, let farthest = finished.max(by: { distance($0) < distance($1) }) {
            drop(farthest)
            finished.removeAll { $0 === farthest }
        }
    }

    /// How far the fetching thread has filled its window; touched by that thread only.
    private final class FillCursor: @unchecked Sendable {
        var written = 0
    }

    /// Takes a window out of use; its memory is reused once no read has it lent. Call with
    /// `condition` locked.
    private func drop(_ window: Window) {
        windows.removeAll { $0 === window }
        window.dropped = true
        if window.lends == 0 { recycle(window.storage) }
    }

    /// Keeps a window's memory for the next fetch: the `spareStorages` largest, so the
    /// small windows of a stream's start do not crowd out the full-sized ones. Call with
    /// `condition` locked.
    private func recycle(_ storage: Storage) {
        spares.append(storage)
        spares.sort { $0.bytes.count > $1.bytes.count }
        if spares.count > Self.spareStorages { spares.removeLast() }
    }
}

extension Int64 {
    /// `self + other`, held at `Int64.max` instead of trapping: offsets near the largest
    /// file size the kernel allows plus a window must not crash the daemon (a listed size of
    /// 2^63 - 1 read with `tail -c 10` would overflow).
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
