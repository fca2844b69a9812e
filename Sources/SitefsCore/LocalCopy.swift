import Foundation
import SitefsAPI
import SitefsProvider
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The local copy of one file under `content/`, shared by every handle open on it.
///
/// Created by the first open for writing (downloaded whole, or empty for O_TRUNC and new
/// files); concurrent opens wait for that one download. Writes go here; a flush snapshots
/// it for upload. It is deleted once no handle is open and the server has confirmed the
/// last save. All fields are guarded by `condition`.
final class LocalCopy: @unchecked Sendable {
    enum State {
        case loading
        case ready
        case failed(Errno)
    }

    let condition = NSCondition()
    var identifier: ItemIdentifier
    let path: String
    var descriptor: Int32 = -1
    var state: State = .loading
    /// The server version this content derives from (uploads are conditional on it).
    var baseVersion: String?
    var handles = 0
    var writers = 0
    /// Written since the last snapshot for upload.
    var dirty = false
    /// Deleted on the server while open: nothing more is uploaded.
    var unlinked = false
    /// A modification time set while an upload is pending, applied after it.
    var pendingModified: Timestamp?

    init(identifier: ItemIdentifier, path: String) {
        self.identifier = identifier
        self.path = path
    }

    /// Waits for the first opener's download. Call with `condition` locked.
    func waitUntilLoaded() throws(Errno) {
        while case .loading = state { condition.wait() }
        if case .failed(let error) = state { throw error }
    }

    /// Current size of the local content.
    func size() -> Int64? {
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    func modificationTime() -> TimeSpec? {
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0 else { return nil }
        return TimeSpec(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec))
    }

    /// The copy's modification time cut to the microseconds the server keeps, and set so on
    /// the copy too: the time a program sees stays the same once the server has the file
    /// (LibreOffice warns about a document whose time changed behind its back).
    func settledModificationTime() -> Timestamp? {
        guard let time = modificationTime() else { return nil }
        let micros = time.nanoseconds / 1_000
        var times = [timespec(tv_sec: Int(time.seconds), tv_nsec: Int(micros * 1_000)),
                     timespec(tv_sec: Int(time.seconds), tv_nsec: Int(micros * 1_000))]
        futimens(descriptor, &times)
        return Timestamp(microsecondsSinceEpoch: time.seconds * 1_000_000 + micros)
    }

    func closeAndDelete() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
        unlink(path)
    }
}
