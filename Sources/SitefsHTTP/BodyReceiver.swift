import Foundation

/// Routes response body bytes to the caller's sink as libcurl's write callback delivers them.
///
/// Only 2xx bodies go to a file or chunk sink; other statuses are error documents kept in
/// memory (see `ResponseSink`). Owns the descriptor when the sink named a path.
final class BodyReceiver {
    private enum Target {
        case memory(limit: Int)
        case descriptor(Int32, startOffset: Int64, path: String?)
        case chunks((UnsafeRawBufferPointer) throws -> Void)
    }

    private let target: Target
    private let ownsDescriptor: Bool
    private(set) var body: [UInt8] = []
    private(set) var length: Int64 = 0

    init(sink: ResponseSink) throws(HTTPClientError) {
        switch sink {
        case .memory(let limit):
            target = .memory(limit: limit)
            ownsDescriptor = false
        case .fileDescriptor(let descriptor, let offset):
            target = .descriptor(descriptor, startOffset: offset, path: nil)
            ownsDescriptor = false
        case .file(let path, let offset):
            let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw .localIO(operation: "open", path: path, errno: errno) }
            target = .descriptor(descriptor, startOffset: offset, path: path)
            ownsDescriptor = true
        case .chunks(let handler):
            target = .chunks(handler)
            ownsDescriptor = false
        }
    }

    deinit {
        if ownsDescriptor, case .descriptor(let descriptor, _, _) = target { close(descriptor) }
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
        case .descriptor(let descriptor, let startOffset, let path):
            try write(chunk, to: descriptor, at: startOffset + length, path: path)
        case .chunks(let handler):
            do { try handler(chunk) } catch { throw .sinkFailed(error) }
        }
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
