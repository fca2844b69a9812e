import Foundation
import Hummingbird
import SitefsCrypto

#if canImport(Glibc)
import Glibc
#endif

/// Immutable file contents, one file per version, under `DATA/blobs/xx/NAME`, and their
/// thumbnails under `DATA/blobs/thumbnails/` (`ThumbnailCache`).
///
/// A blob is written to `DATA/tmp/`, fsynced, renamed into place and its directory fsynced
/// before any metadata points at it, so a committed version always has its bytes on disk.
/// Blobs are never modified; a new version is a new blob. Writes use plain POSIX calls on
/// the request's task: they hit the page cache and the body is pulled with backpressure,
/// so memory stays at one chunk however large the upload is.
struct BlobStore: Sendable {
    let root: URL
    let staging: URL
    /// `root` and the thumbnails folder as paths, for the paths of blobs and thumbnails: a
    /// folder's delete names thousands of them, and building each as a `URL` (which asks the
    /// disk whether a component it is not told about is a directory) costs more than deleting it.
    let rootPath: String
    let thumbnailsPath: String
    /// Removals a request does not wait for (`removeInBackground`), one at a time in the
    /// order asked. Shared by every copy of the store.
    private let removals = DispatchQueue(label: "sitefs-server.blob-removals", qos: .utility)

    init(dataDirectory: URL) throws {
        root = dataDirectory.appendingPathComponent("blobs", isDirectory: true)
        staging = dataDirectory.appendingPathComponent("tmp", isDirectory: true)
        rootPath = root.path
        thumbnailsPath = Self.joined(rootPath, "thumbnails")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        removeAbandonedStaging()
    }

    /// A staging file untouched this long is a leftover of an upload interrupted by a crash.
    /// Not "every file at start": other instances (and admin commands) share the folder,
    /// and an upload in progress writes at least every connection timeout (a minute at most).
    static let abandonedAfter: TimeInterval = 3600

    /// Removes staging files nobody has written to for `abandonedAfter`.
    func removeAbandonedStaging(now: Date = Date()) {
        for leftover in (try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? [] {
            let path = staging.appendingPathComponent(leftover).path
            if let modified = Self.modificationTime(of: path), now.timeIntervalSince(modified) > Self.abandonedAfter {
                unlink(path)
            }
        }
    }

    /// Where thumbnails of blobs are kept (see `ThumbnailCache`): beside the shards, so every
    /// instance sharing the blob folder shares them too.
    var thumbnails: URL { root.appendingPathComponent("thumbnails", isDirectory: true) }

    /// Every blob's name with its modification time (the time it was published).
    func allBlobs() -> [(name: String, published: Date)] {
        var found: [(String, Date)] = []
        // Shards are the first two characters of blob names; the thumbnails folder is no shard.
        for shard in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] where shard.utf8.count == 2 {
            let folder = root.appendingPathComponent(shard).path
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                if let published = Self.modificationTime(of: (folder as NSString).appendingPathComponent(name)) {
                    found.append((name, published))
                }
            }
        }
        return found
    }

    private static func modificationTime(of path: String) -> Date? {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(status.st_mtim.tv_sec))
    }

    /// A fresh name for a new version; also used as that version's etag.
    static func newName() -> String {
        Hex.encode(SecureRandom.bytes(count: 16))
    }

    /// Where the blob `name` is: in the shard of its first two characters. Names are
    /// hex (`newName`), so they need no escaping in a path.
    func path(of name: String) -> String {
        Self.joined(Self.joined(rootPath, String(name.prefix(2))), name)
    }

    /// `name` inside the folder at `folder`.
    static func joined(_ folder: String, _ name: String) -> String {
        folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }

    /// Streams `chunks` into a new blob. Throws 413 once more than `limit` bytes arrive.
    func store<Chunks: AsyncSequence>(_ chunks: Chunks, limit: Int64) async throws -> (name: String, size: Int64)
    where Chunks.Element == ByteBuffer {
        let name = Self.newName()
        let writer = try StagingFile(directory: staging, name: name)
        do {
            for try await chunk in chunks {
                if writer.size + Int64(chunk.readableBytes) > limit {
                    throw APIError.contentTooLarge(limit: limit)
                }
                try chunk.withUnsafeReadableBytes { try writer.append($0) }
            }
            try publish(writer, as: name)
            return (name, writer.size)
        } catch {
            writer.abandon()
            throw error
        }
    }

    /// Stores bytes already in memory (demo documents).
    func store(bytes: [UInt8]) throws -> (name: String, size: Int64) {
        let name = Self.newName()
        let writer = try StagingFile(directory: staging, name: name)
        do {
            try bytes.withUnsafeBytes { try writer.append($0) }
            try publish(writer, as: name)
            return (name, writer.size)
        } catch {
            writer.abandon()
            throw error
        }
    }

    /// Copies a local file in chunks (folder import).
    func store(copyOf file: URL) throws -> (name: String, size: Int64) {
        let source = open(file.path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw POSIXFailure("open \(file.path)") }
        defer { close(source) }
        let name = Self.newName()
        let writer = try StagingFile(directory: staging, name: name)
        do {
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { throw POSIXFailure("read \(file.path)") }
                if count == 0 { break }
                try buffer.withUnsafeBytes { try writer.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
            try publish(writer, as: name)
            return (name, writer.size)
        } catch {
            writer.abandon()
            throw error
        }
    }

    /// `remove`s blobs after the caller has returned: a folder's delete answers once it has
    /// committed, and its blobs (each with five thumbnail names to try) go behind it; for
    /// 1,000 of them that takes longer than the commit. Safe because a blob no version names
    /// is never named again (names are never reused); one a crash leaves behind is
    /// `BlobCollector`'s.
    func removeInBackground(_ names: [String]) {
        guard !names.isEmpty else { return }
        removals.async { remove(names) }
    }

    /// Returns once every removal asked for before the call is done (shutdown, tests).
    func finishRemovals() {
        removals.sync {}
    }

    /// Deletes blobs no version refers to any more, and their thumbnails. Missing files are fine.
    func remove(_ names: [String]) {
        let thumbnails = ThumbnailCache(blobs: self)
        for name in names {
            unlink(path(of: name))
            thumbnails.remove(blob: name)
        }
    }

    private func publish(_ writer: StagingFile, as name: String) throws {
        try writer.finish()
        let shard = root.appendingPathComponent(String(name.prefix(2)), isDirectory: true)
        if mkdir(shard.path, 0o755) != 0 && errno != EEXIST { throw POSIXFailure("mkdir \(shard.path)") }
        guard rename(writer.path, path(of: name)) == 0 else { throw POSIXFailure("rename into \(shard.path)") }
        try fsyncDirectory(shard.path)
    }
}

/// A file being written under `tmp/`, removed again unless published.
private final class StagingFile: @unchecked Sendable {
    let path: String
    private let descriptor: Int32
    private(set) var size: Int64 = 0
    private var isOpen = true

    init(directory: URL, name: String) throws {
        path = directory.appendingPathComponent(name).path
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFailure("create \(path)") }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw POSIXFailure("write \(path)") }
            offset += written
        }
        size += Int64(bytes.count)
    }

    func finish() throws {
        guard fsync(descriptor) == 0 else { throw POSIXFailure("fsync \(path)") }
        isOpen = false
        guard close(descriptor) == 0 else { throw POSIXFailure("close \(path)") }
    }

    func abandon() {
        if isOpen { close(descriptor) }
        isOpen = false
        unlink(path)
    }
}

func fsyncDirectory(_ path: String) throws {
    let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw POSIXFailure("open \(path)") }
    defer { close(fd) }
    guard fsync(fd) == 0 else { throw POSIXFailure("fsync \(path)") }
}

/// A failed system call, with errno's text.
struct POSIXFailure: Error, CustomStringConvertible {
    let description: String
    init(_ what: String) {
        description = "\(what): \(String(cString: strerror(errno)))"
    }
}
