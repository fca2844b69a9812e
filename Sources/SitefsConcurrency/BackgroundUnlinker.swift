import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Deletes files, the large ones on a queue of its own.
///
/// Freeing a large file's blocks is slow: on ext4 mounted with online discard, unlinking a
/// fsynced 64 MiB file took 8.5 ms and a 1 GiB one 127 ms. The files the daemon deletes are
/// mostly confirmed local copies and uploaded snapshots, and those were deleted while holding
/// the lock every open takes (the local copies' table) or the uploader's, and before an
/// upload counted as reported, which `sitefs sync` waits for.
///
/// What is cheap to delete goes at once: a name whose file keeps another link (a snapshot
/// hard-linked to its local copy; `LocalCopy.unshare` counts links, so that one must be gone
/// when the call returns), or a small file.
public final class BackgroundUnlinker: Sendable {
    private let queue = DispatchQueue(label: "sitefs.unlink", qos: .utility)
    /// Files with more blocks allocated than this are deleted in the background.
    private static let inlineLimit: Int64 = 4 << 20

    public init() {}

    /// Deletes `path`. With `nameIsReused` (a local copy's path, made again by the next open
    /// of the item), a file left to the background is renamed aside first, so the name is free
    /// at once and the later unlink cannot hit a new file of that name.
    public func delete(_ path: String, nameIsReused: Bool = false) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_nlink == 1, Int64(info.st_blocks) * 512 > Self.inlineLimit else {
            unlink(path)
            return
        }
        let doomed = nameIsReused ? path + ".discarded-" + UUID().uuidString : path
        guard doomed == path || rename(path, doomed) == 0 else {
            unlink(path)
            return
        }
        queue.async { _ = unlink(doomed) }
    }

    /// Returns once every deletion asked for before the call is done (unmount, tests).
    public func drain() {
        queue.sync {}
    }
}
