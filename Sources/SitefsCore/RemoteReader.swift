import Foundation
import SitefsProvider
import SystemPackage

/// Serves a read-only open without a local copy: ranged requests as the reader goes, so
/// `head -c 4096` of a huge file fetches kilobytes while `cat` streams in large requests.
/// The version is pinned at open, so a reader keeps seeing the version it opened even if
/// the server gets a newer one meanwhile.
///
/// The kernel reads ahead on several threads at once and out of order, so "sequential" is
/// judged by distance from the furthest byte asked for, not by exact succession: reads
/// near it double the window (up to a limit), a far one resets it. A read covered by a
/// fetch already in flight waits for that fetch instead of asking again, and a sequential
/// reader keeps up to `aheadWindows` windows being fetched in the background ahead of it,
/// so the transfer does not stall between requests. At most a few windows are kept.
final class RemoteReader: @unchecked Sendable {
    let identifier: ItemIdentifier
    let version: String
    let size: Int64
    private let backend: any DocumentBackend
    private let maximumWindow: Int
    private static let initialWindow = 128 << 10
    private static let keptSegments = 4
    private static let aheadWindows = 2
    /// Buffers of dropped windows kept for the next fetches (see `ContentSink.buffer`).
    private static let spareBuffers = 2

    /// A fetched window. Its bytes are read only under `condition`: once the segment is
    /// dropped its buffer is refilled by another fetch.
    private struct Segment {
        let start: Int64
        let buffer: ReceiveBuffer
        var end: Int64 { start + Int64(buffer.bytes.count) }
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var segments: [Segment] = []
    private var spares: [ReceiveBuffer] = []
    private var fetching: [ClosedRange<Int64>] = []
    private var window = RemoteReader.initialWindow
    /// End of the furthest fetch started: reads near it continue the stream.
    private var streamEnd: Int64 = 0

    init(identifier: ItemIdentifier, version: String, size: Int64, backend: any DocumentBackend, maximumWindow: Int) {
        self.identifier = identifier
        self.version = version
        self.size = size
        self.backend = backend
        self.maximumWindow = max(maximumWindow, Self.initialWindow)
    }

    func read(offset: Int64, count: Int, into buffer: UnsafeMutableRawBufferPointer) throws(ProviderError) -> Int {
        guard offset < size, count > 0 else { return 0 }
        let wanted = Int(min(Int64(count), size - offset))
        let range = offset...(offset + Int64(wanted) - 1)
        condition.lock()
        while true {
            if let segment = segments.last(where: { $0.start <= range.lowerBound && range.upperBound < $0.end }) {
                copy(range, from: segment, into: buffer)
                let prefetch = nextPrefetch(after: range, in: segment)
                condition.unlock()
                if let prefetch { startBackgroundFetch(prefetch) }
                return wanted
            }
            // Another thread is fetching these bytes: wait for it (it ends within the
            // backend's timeouts; if it fails, this read fetches for itself).
            guard fetching.contains(where: { $0.contains(range.lowerBound) && $0.contains(range.upperBound) }) else { break }
            condition.wait()
        }
        let fetch = plannedFetch(for: range)
        condition.unlock()
        try fetchSegment(fetch, thenCopy: range, into: buffer)
        return wanted
    }

    /// Chooses the window for a read nothing covers. Call with `condition` locked.
    private func plannedFetch(for range: ClosedRange<Int64>) -> ClosedRange<Int64> {
        let sequential = range.lowerBound >= streamEnd - Int64(window) && range.lowerBound <= streamEnd + Int64(window)
        window = sequential ? min(window * 2, maximumWindow) : Self.initialWindow
        let end = min(size, range.lowerBound + Int64(max(window, range.count))) - 1
        let fetch = range.lowerBound...end
        fetching.append(fetch)
        streamEnd = sequential ? max(streamEnd, end + 1) : end + 1
        return fetch
    }

    /// The next window to fetch in the background, when a read of the stream has fewer than
    /// `aheadWindows` windows ahead of it fetched or being fetched. Call with `condition` locked.
    private func nextPrefetch(after range: ClosedRange<Int64>, in segment: Segment) -> ClosedRange<Int64>? {
        guard streamEnd < size, segment.end >= streamEnd - Int64(Self.aheadWindows * window),
              streamEnd - range.upperBound < Int64(Self.aheadWindows * window),
              fetching.count < Self.aheadWindows else { return nil }
        window = min(window * 2, maximumWindow)
        let fetch = streamEnd...(min(size, streamEnd + Int64(window)) - 1)
        fetching.append(fetch)
        streamEnd = fetch.upperBound + 1
        return fetch
    }

    private func startBackgroundFetch(_ fetch: ClosedRange<Int64>) {
        let thread = Thread { [self] in try? fetchSegment(fetch) }
        thread.name = "sitefs-readahead"
        thread.start()
    }

    /// Fetches one window and keeps it (the oldest window goes); waiters are woken either
    /// way. `range`, if given, is copied into `destination` before any other thread can drop
    /// the window and reuse its buffer.
    private func fetchSegment(_ fetch: ClosedRange<Int64>, thenCopy range: ClosedRange<Int64>? = nil,
                              into destination: UnsafeMutableRawBufferPointer? = nil) throws(ProviderError) {
        condition.lock()
        let buffer = spares.popLast() ?? ReceiveBuffer()
        condition.unlock()
        var failure: ProviderError?
        do throws(ProviderError) {
            let outcome = try backend.fetchContent(of: identifier, version: version, range: fetch, ifNoneMatch: nil,
                                                   into: .buffer(buffer, limit: fetch.count))
            guard case .fetched = outcome, buffer.bytes.count == fetch.count else {
                throw .invalidResponse("short range response for \(identifier)")
            }
        } catch {
            failure = error
        }
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        if let index = fetching.firstIndex(of: fetch) { fetching.remove(at: index) }
        if let failure {
            recycle(buffer)
            throw failure
        }
        let segment = Segment(start: fetch.lowerBound, buffer: buffer)
        if let range, let destination { copy(range, from: segment, into: destination) }
        segments.append(segment)
        if segments.count > Self.keptSegments { recycle(segments.removeFirst().buffer) }
    }

    /// Keeps a buffer for the next fetch, up to `spareBuffers`. Call with `condition` locked.
    private func recycle(_ buffer: ReceiveBuffer) {
        if spares.count < Self.spareBuffers { spares.append(buffer) }
    }

    private func copy(_ range: ClosedRange<Int64>, from segment: Segment, into buffer: UnsafeMutableRawBufferPointer) {
        let from = Int(range.lowerBound - segment.start)
        segment.buffer.bytes.withUnsafeBytes {
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[from..<(from + range.count)]))
        }
    }
}
