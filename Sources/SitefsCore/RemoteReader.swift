import SitefsProvider
import Synchronization
import SystemPackage

/// Serves a read-only open without a local copy: ranged requests as the reader goes, with
/// a read-ahead window that doubles on sequential reads (up to a limit) and resets on a
/// seek, so `head -c 4096` of a huge file fetches kilobytes while `cat` streams in large
/// requests. The version is pinned at open, so a reader keeps seeing the version it
/// opened even if the server gets a newer one meanwhile.
final class RemoteReader: Sendable {
    let identifier: ItemIdentifier
    let version: String
    let size: Int64
    private let backend: any DocumentBackend
    private let maximumWindow: Int
    private static let initialWindow = 128 << 10

    private struct Window {
        var start: Int64 = 0
        var bytes: [UInt8] = []
        var nextExpected: Int64 = 0
        var size = RemoteReader.initialWindow
    }

    private let window = Mutex(Window())

    init(identifier: ItemIdentifier, version: String, size: Int64, backend: any DocumentBackend, maximumWindow: Int) {
        self.identifier = identifier
        self.version = version
        self.size = size
        self.backend = backend
        self.maximumWindow = maximumWindow
    }

    func read(offset: Int64, count: Int, into buffer: UnsafeMutableRawBufferPointer) throws(ProviderError) -> Int {
        guard offset < size, count > 0 else { return 0 }
        let wanted = Int(min(Int64(count), size - offset))
        let fetchLength: Int? = window.withLock { state in
            if offset >= state.start, offset + Int64(wanted) <= state.start + Int64(state.bytes.count) {
                let from = Int(offset - state.start)
                state.bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[from..<(from + wanted)])) }
                state.nextExpected = offset + Int64(wanted)
                return nil
            }
            state.size = offset == state.nextExpected ? min(state.size * 2, maximumWindow) : Self.initialWindow
            return max(wanted, state.size)
        }
        guard let fetchLength else { return wanted }
        // The request runs outside the lock: other reads of this handle are not held up by it.
        let end = min(size, offset + Int64(fetchLength)) - 1
        let outcome = try backend.fetchContent(of: identifier, version: version, range: offset...end, ifNoneMatch: nil,
                                               into: .memory(limit: fetchLength))
        guard case .fetched(_, _, let fetched?) = outcome, fetched.count >= wanted else {
            throw .invalidResponse("short range response for \(identifier)")
        }
        fetched.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<wanted])) }
        window.withLock { state in
            state.start = offset
            state.bytes = fetched
            state.nextExpected = offset + Int64(wanted)
        }
        return wanted
    }
}
