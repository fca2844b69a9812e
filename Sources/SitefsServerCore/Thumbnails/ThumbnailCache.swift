import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Thumbnails on disk, beside the blobs they show: `blobs/thumbnails/BLOB-BOX.png`, and
/// `blobs/thumbnails/BLOB.none` where none can be made from that blob (corrupt, or an office
/// document without a preview picture), so a bad file costs one attempt, not one per request.
///
/// What holds, and why it is safe to share: a blob never changes and its name is never reused
/// (`BlobStore`), so a thumbnail named after it is right forever and every server instance
/// sharing the blob folder (PostgreSQL deployments) can use and make the same files. Each is
/// written to the staging folder, fsynced and renamed into place, so a reader sees a whole
/// file or none; two instances making the same one at once both rename whole files.
///
/// They go with their blob: `BlobStore.remove` deletes them with it, and `BlobCollector`
/// deletes any whose blob is gone (a crash between the two, or a thumbnail finished after
/// its blob was deleted). So the folder holds at most five files per stored blob.
struct ThumbnailCache: Sendable {
    let blobs: BlobStore

    /// The freedesktop thumbnail sizes; a request's size is rounded up to one of them, and
    /// the thumbnail made to fit that box (so `size=100` gets one of up to 128 x 128).
    static let boxes = [128, 256, 512, 1024]
    /// The sizes a request may ask for: up to the largest box.
    static let sizes = 1...1024

    /// The box a requested size is served from; nil outside `sizes`.
    static func box(for size: Int) -> Int? {
        guard sizes.contains(size) else { return nil }
        return boxes.first { size <= $0 }
    }

    var folder: URL { blobs.thumbnails }

    func path(blob: String, box: Int) -> String {
        BlobStore.joined(blobs.thumbnailsPath, "\(blob)-\(box).png")
    }

    private func failurePath(blob: String) -> String {
        BlobStore.joined(blobs.thumbnailsPath, "\(blob).none")
    }

    enum Lookup: Equatable {
        /// Made before: the PNG's path and length.
        case thumbnail(path: String, size: Int64)
        /// Tried before; this blob has no thumbnail.
        case none
        case missing
    }

    func lookup(blob: String, box: Int) -> Lookup {
        var status = stat()
        let thumbnail = path(blob: blob, box: box)
        if stat(thumbnail, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_size > 0 {
            return .thumbnail(path: thumbnail, size: Int64(status.st_size))
        }
        return access(failurePath(blob: blob), F_OK) == 0 ? .none : .missing
    }

    /// Stores a thumbnail made from `blob`.
    func store(_ png: [UInt8], blob: String, box: Int) throws {
        try publish(png, at: path(blob: blob, box: box))
    }

    /// Records that no thumbnail can be made from `blob`.
    func storeFailure(blob: String) throws {
        try publish([], at: failurePath(blob: blob))
    }

    private func publish(_ bytes: [UInt8], at destination: String) throws {
        if mkdir(folder.path, 0o755) != 0 && errno != EEXIST { throw POSIXFailure("mkdir \(folder.path)") }
        let staged = blobs.staging.appendingPathComponent("thumbnail-" + BlobStore.newName()).path
        let descriptor = open(staged, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFailure("create \(staged)") }
        var failure: POSIXFailure?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { failure = POSIXFailure("write \(staged)"); return }
                offset += written
            }
        }
        if failure == nil, fsync(descriptor) != 0 { failure = POSIXFailure("fsync \(staged)") }
        close(descriptor)
        if failure == nil, rename(staged, destination) != 0 { failure = POSIXFailure("rename to \(destination)") }
        if let failure {
            unlink(staged)
            throw failure
        }
    }

    /// Deletes every thumbnail made from `blob` (it is being deleted). Missing files are fine.
    func remove(blob: String) {
        for box in Self.boxes { unlink(path(blob: blob, box: box)) }
        unlink(failurePath(blob: blob))
    }

    /// Deletes thumbnails (and failure marks) whose blob no longer exists; returns how many.
    /// No grace period is needed: a blob that is gone never comes back (names are never
    /// reused), so its thumbnails can never be served again.
    func removeOrphans() -> Int {
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
            guard let blob = Self.blobName(ofFile: name) else { continue }
            var status = stat()
            if lstat(blobs.path(of: blob), &status) != 0 && errno == ENOENT {
                if unlink(folder.appendingPathComponent(name).path) == 0 { removed += 1 }
            }
        }
        return removed
    }

    /// The blob a thumbnail file was made from (`BLOB-BOX.png` or `BLOB.none`), or nil for a
    /// name this cache never writes.
    static func blobName(ofFile name: String) -> String? {
        let blob: Substring
        if name.hasSuffix(".none") {
            blob = name.dropLast(".none".count)
        } else if name.hasSuffix(".png"), let dash = name.lastIndex(of: "-"),
                  let box = Int(name[name.index(after: dash)..<name.index(name.endIndex, offsetBy: -4)]), boxes.contains(box) {
            blob = name[..<dash]
        } else {
            return nil
        }
        guard blob.count >= 2, blob.utf8.allSatisfy({ Self.isHex($0) }) else { return nil }
        return String(blob)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
