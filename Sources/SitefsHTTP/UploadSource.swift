import Foundation

/// The request body as libcurl's read callback pulls it, in pieces, from memory or disk.
///
/// Files are read with `pread` at an explicit position, so rewinding (which libcurl asks for
/// when it must resend the body on a fresh connection) is just moving that position.
///
/// What has been sent of a file of at least `adviceThreshold` bytes leaves the page cache
/// (POSIX_FADV_DONTNEED) as it goes: an upload reads its file once, and the local copy
/// behind it goes once the server has confirmed it, so those pages would only crowd out
/// other caches (and, with the server on the same machine, double what a large save holds
/// in memory). Such files are staged snapshots, already fsynced, so their pages are clean
/// and go at once. The advice drops only clean pages; a resend, or a program still reading
/// the open copy, reads from disk. On the bench VM, where memory not used lately is slow to
/// touch, the server's writes of a 64 MiB upload then reuse these pages: see
/// docs/benchmarking.md.
///
/// A smaller file is left alone: its pages are few, and a small snapshot is not fsynced
/// (its bytes are in its journal row), so advice on it would first write its dirty pages to
/// disk, an allocation and a write for a file deleted once the server has it.
final class UploadSource {
    private enum Storage {
        case bytes([UInt8])
        case file(descriptor: Int32, path: String)
    }

    /// Files smaller than this keep their pages (see above).
    static let adviceThreshold: Int64 = 1 << 20

    private let storage: Storage
    let size: Int64
    private var position: Int64 = 0 {
        didSet { onProgress?(position) }
    }
    /// Told the read position after each piece (bytes handed to libcurl).
    var onProgress: (@Sendable (Int64) -> Void)?

    init(bytes: [UInt8]) {
        storage = .bytes(bytes)
        size = Int64(bytes.count)
    }

    /// Opens the file and takes its size now; the descriptor is closed when the source goes.
    init(filePath path: String) throws(HTTPClientError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .localIO(operation: "open", path: path, errno: errno) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw .localIO(operation: "stat", path: path, errno: code)
        }
        storage = .file(descriptor: descriptor, path: path)
        size = Int64(info.st_size)
    }

    deinit {
        if case .file(let descriptor, _) = storage { close(descriptor) }
    }

    /// Fills as much of `buffer` as possible; 0 means the body is complete.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPClientError) -> Int {
        let wanted = Int(min(Int64(buffer.count), size - position))
        guard wanted > 0, let base = buffer.baseAddress else { return 0 }
        switch storage {
        case .bytes(let bytes):
            bytes.withUnsafeBytes { source in
                base.copyMemory(from: source.baseAddress! + Int(position), byteCount: wanted)
            }
            position += Int64(wanted)
            return wanted
        case .file(let descriptor, let path):
            while true {
                let count = pread(descriptor, base, wanted, off_t(position))
                if count > 0 {
                    if size >= Self.adviceThreshold {
                        _ = posix_fadvise(descriptor, off_t(position), off_t(count), POSIX_FADV_DONTNEED)  // a hint
                    }
                    position += Int64(count)
                    return count
                }
                if count == 0 {
                    // The file shrank after its size was sent: the body cannot be completed.
                    throw .localIO(operation: "read (file shorter than when the upload started)", path: path, errno: EIO)
                }
                if errno != EINTR { throw .localIO(operation: "read", path: path, errno: errno) }
            }
        }
    }

    /// Moves the read position for a resend; false if the offset is outside the body.
    func seek(to offset: Int64) -> Bool {
        guard offset >= 0, offset <= size else { return false }
        position = offset
        return true
    }
}
