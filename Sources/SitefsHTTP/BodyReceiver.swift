import Foundation

/// Routes response body bytes to the caller's sink as libcurl's write callback delivers them.
///
/// Only 2xx bodies go to a file or chunk sink; other statuses are error documents kept in
/// memory (see `ResponseSink`). Owns the descriptor when the sink named a path.
final class BodyReceiver {
    private enum Target {
        case memory(limit: Int)
        case descriptor(Int32, startOffset: Int64, path: String?, limit: ResponseSink.DownloadLimit?)
        case chunks((Int, UnsafeRawBufferPointer) throws -> Void)
    }

    private let target: Target
    private let ownsDescriptor: Bool
    private(set) var body: [UInt8] = []
    private(set) var length: Int64 = 0
    /// For a bounded download: how many bytes the body may have, settled at its first piece.
    private var allowed: Int64?

    init(sink: ResponseSink) throws(HTTPClientError) {
        switch sink {
        case .memory(let limit):
            target = .memory(limit: limit)
            ownsDescriptor = false
        case .fileDescriptor(let descriptor, let offset, let limit):
            target = .descriptor(descriptor, startOffset: offset, path: nil, limit: limit)
            ownsDescriptor = false
        case .file(let path, let offset):
            let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw .localIO(operation: "open", path: path, errno: errno) }
            target = .descriptor(descriptor, startOffset: offset, path: path, limit: nil)
            ownsDescriptor = true
        case .chunks(let handler):
            target = .chunks { _, chunk in try handler(chunk) }
            ownsDescriptor = false
        case .statusChunks(let handler):
            target = .chunks(handler)
            ownsDescriptor = false
        }
    }

    deinit {
        if ownsDescriptor, case .descriptor(let descriptor, _, _, _) = target { close(descriptor) }
    }

    /// Takes one piece of the body of a response with the given status. `declaredLength`
    /// (Content-Length) is read once, on the first piece kept in memory: the buffer is sized
    /// for the whole body, so a large one (a listing page) is not copied again at every doubling.
    func receive(_ chunk: UnsafeRawBufferPointer, status: Int, declaredLength: @autoclosure () -> Int? = nil) throws(HTTPClientError) {
        defer { length += Int64(chunk.count) }
        switch target {
        case .memory(let limit):
            guard body.count + chunk.count <= limit else { throw .responseTooLarge(limit: limit) }
            if body.isEmpty, let declared = declaredLength(), declared > chunk.count, declared <= limit {
                body.reserveCapacity(declared)
            }
            body.append(contentsOf: chunk)
        case _ where !(200..<300).contains(status):
            let room = ResponseSink.errorBodyLimit - body.count
            if room > 0 { body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk.prefix(room))) }
        case .descriptor(let descriptor, let startOffset, let path, let limit):
            if let limit {
                if self.allowed == nil {
                    self.allowed = try allowedLength(limit, declared: declaredLength(), descriptor: descriptor, path: path)
                }
                let allowed = self.allowed!
                guard Int64(chunk.count) <= allowed - length else { throw .responseTooLarge(limit: Int(clamping: allowed)) }
            }
            try write(chunk, to: descriptor, at: startOffset + length, path: path)
        case .chunks(let handler):
            // A sink that stops the transfer itself (a reader gone, a stream no longer wanted)
            // says nothing about the server: cancelled, not a failed transfer.
            do { try handler(status, chunk) } catch is CancellationError { throw .cancelled } catch { throw .sinkFailed(error) }
        }
    }

    /// The bound of a download (`ResponseSink.DownloadLimit`): its Content-Length if the disk
    /// holding `descriptor` has room for that and the reserve, else the promised size.
    private func allowedLength(_ limit: ResponseSink.DownloadLimit, declared: Int?, descriptor: Int32,
                               path: String?) throws(HTTPClientError) -> Int64 {
        guard let declared, declared >= 0 else { return limit.promised }
        var disk = statvfs()
        if fstatvfs(descriptor, &disk) == 0 {
            let (free, overflow) = Int64(clamping: disk.f_bavail).multipliedReportingOverflow(by: Int64(clamping: disk.f_frsize))
            if !overflow, Int64(declared) > free - limit.reserve {
                throw .localIO(operation: "download of \(declared) bytes (the disk keeps \(limit.reserve) free)", path: path,
                               errno: ENOSPC)
            }
        }
        return Int64(declared)
    }

    private func write(
        _ chunk: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int64, path: String?
    ) throws(HTTPClientError) {
        var done = 0
        while done < chunk.count {
            let count = pwrite(descriptor, chunk.baseAddress! + done, chunk.count - done, off_t(offset + Int64(done)))
            if count > 0 {
                done += count
            } else if count == 0 {
                throw .localIO(operation: "write (no progress)", path: path, errno: EIO)
            } else if errno != EINTR {
                throw .localIO(operation: "write", path: path, errno: errno)
            }
        }
    }
}
