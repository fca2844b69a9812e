import Foundation
import SitefsHTTP
import SitefsProvider

/// Where a download's body goes, and how much of it: the bytes of `range` to the caller's
/// sink, whether the server sent just the range (206) or ignored `Range` and sent the whole
/// content (200), in which case the bytes around the range are dropped as they pass. A
/// server that sends more than was asked for (a pieces sink's limit) fails the download.
final class RangeWindow {
    private let range: ClosedRange<Int64>?
    private let sink: ContentSink
    /// Body bytes seen so far, and bytes handed on.
    private var position: Int64 = 0
    private var delivered: Int64 = 0
    /// Why the sink stopped the transfer, if it did.
    private(set) var failure: ProviderError?

    init(range: ClosedRange<Int64>?, sink: ContentSink) {
        self.range = range
        self.sink = sink
    }

    /// What the HTTP client writes into. A whole download to a file keeps the client's own
    /// bound on its size (`DownloadLimit`: Content-Length, and room on the disk).
    var responseSink: ResponseSink {
        if range == nil, case .file(let descriptor, let offset, let promised) = sink {
            return .fileDescriptor(descriptor, offset: offset, limit: .init(promised: promised))
        }
        return .statusChunks { [self] status, chunk in try receive(status: status, chunk) }
    }

    private func receive(status: Int, _ chunk: UnsafeRawBufferPointer) throws {
        defer { position += Int64(chunk.count) }
        var wanted = chunk
        if let range, status == 200 {
            let start = Int(clamping: max(range.lowerBound - position, 0))
            let end = Int(clamping: min(range.upperBound + 1 - position, Int64(chunk.count)))
            guard start < end else { return }
            wanted = UnsafeRawBufferPointer(rebasing: chunk[start..<end])
        }
        try deliver(wanted)
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) throws {
        switch sink {
        case .pieces(let limit, let receive):
            guard delivered + Int64(bytes.count) <= Int64(limit) else {
                failure = .invalidResponse("a content response larger than the range asked for")
                throw CancellationError()
            }
            delivered += Int64(bytes.count)
            try receive(bytes)
        case .file(let descriptor, let offset, _):
            if let range, delivered + Int64(bytes.count) > range.upperBound - range.lowerBound + 1 {
                failure = .invalidResponse("a content response larger than the range asked for")
                throw CancellationError()
            }
            var done = 0
            while done < bytes.count {
                let count = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + delivered + Int64(done)))
                if count > 0 {
                    done += count
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    failure = .localIO("write of downloaded content: \(String(cString: strerror(errno)))")
                    throw CancellationError()
                }
            }
            delivered += Int64(bytes.count)
        }
    }
}
