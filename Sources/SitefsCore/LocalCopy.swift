import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

#if canImport(Glibc)
import Glibc
import SitefsConcurrency
#endif

/// The local copy of one file under `content/`, shared by every handle open on it.
///
/// Created by the first open for writing (downloaded whole, or empty for O_TRUNC and new
/// files); concurrent opens wait for that one download. Writes go here; a flush snapshots
/// it for upload, usually by hard-linking its file into staging: then the file is the
/// snapshot too and must not change in place, so every change goes through `change`, which
/// first gives the copy a file of its own (`unshare`). It is deleted once no handle is
/// open and the server has confirmed the last save. All fields are guarded by `condition`.
final class LocalCopy: @unchecked Sendable {
    enum State {
        case loading
        case ready
        case failed(Errno)
    }

    /// Guards every field. Lock order: after `SitefsFilesystem.copies`, before the sync engine's locks;
    /// never held across I/O that waits on a disk or a server (see `SitefsFilesystem`).
    let condition = OrderedCondition(rank: .copy)
    var identifier: ItemIdentifier
    let path: String
    var descriptor: Int32 = -1
    var state: State = .loading
    /// The server version this content derives from (uploads are conditional on it).
    var baseVersion: String?
    /// The item as it was when a handle last opened this copy: what `fstat` and `ftruncate`
    /// through an open handle go by once the server's item is gone (deleted there while the
    /// file is open; the save then creates it again).
    var knownItem: ProviderItem?
    /// Where `knownItem`'s folder stood when the file was opened: a save after the change
    /// feed reported that folder deleted (and the cache forgot it) still says where to make
    /// it again.
    var knownFolders: FolderChain?
    /// Open handles, and how many of them write. Never negative (asserted in debug builds).
    var handles = 0 { didSet { assert(handles >= 0, "\(identifier): handle count \(handles)") } }
    var writers = 0 { didSet { assert(writers >= 0 && writers <= handles, "\(identifier): \(writers) writers of \(handles) handles") } }
    /// Written since the last snapshot for upload.
    var dirty = false
    /// Deleted on the server while open: nothing more is uploaded.
    var unlinked = false
    /// A modification time set while an upload is pending, applied after it.
    var pendingModified: Timestamp?
    /// The copy's file is also a staged snapshot (hard-linked by a save).
    var sharesSnapshot = false
    /// Changes running right now outside the lock (see `change`); a save waits for them.
    var activeChanges = 0 { didSet { assert(activeChanges >= 0, "\(identifier): \(activeChanges) changes") } }
    /// A save is staging this copy's content outside the lock (see `SitefsFilesystem.save`):
    /// what would change the content, its times or its file (`change`, truncation, a set
    /// modification time, another save, cleanup) waits until it is over; what only looks
    /// (`stat`, reads) does not.
    var saving = false

    init(identifier: ItemIdentifier, path: String) {
        self.identifier = identifier
        self.path = path
    }

    /// Waits for the first opener's download. Call with `condition` locked.
    /// Waits (with `condition` locked) for another opener's download or revalidation. A
    /// caller that gives up meanwhile gets EINTR; the download goes on for the others.
    func waitUntilLoaded(interruption: Cancellation) throws(Errno) {
        while case .loading = state {
            if !interruption.mayCancel {
                condition.wait()
            } else {
                // Woken by the loader's broadcast, or every quarter second to ask again.
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.25))
                if case .loading = state, interruption.isCancelled { throw .interrupted }
            }
        }
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

    /// Changes the content through `body` (given the descriptor, called without the lock,
    /// so writes from several handles run in parallel) and marks the copy dirty. A file
    /// shared with a staged snapshot is unshared first; `replacingAll` (O_TRUNC) skips
    /// copying what is about to go.
    func change<T>(replacingAll: Bool = false, _ body: (Int32) throws(Errno) -> T) throws(Errno) -> T {
        condition.lock()
        waitWhileSaving()
        do {
            try unshare(copying: !replacingAll)
        } catch {
            condition.unlock()
            throw error
        }
        activeChanges += 1
        let descriptor = self.descriptor
        condition.unlock()
        defer {
            condition.lock()
            activeChanges -= 1
            dirty = true
            if activeChanges == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body(descriptor)
    }

    /// Waits until no change runs, so a snapshot taken now holds no half-made write and no
    /// write lands in it afterwards. Call with `condition` locked.
    func waitForChanges() {
        while activeChanges > 0 { condition.wait() }
    }

    /// Waits until no save is staging the content. Call with `condition` locked.
    func waitWhileSaving() {
        while saving { condition.wait() }
    }

    /// Gives the copy a file of its own when its file is also a staged snapshot: the content
    /// (unless `copying` is false) and times go to a new file, which takes the copy's path
    /// and, by dup2, its descriptor number, so reads running meanwhile see the same bytes
    /// either way. A snapshot already uploaded and removed leaves the file unshared (one
    /// link): nothing to copy. Call with `condition` locked.
    func unshare(copying: Bool) throws(Errno) {
        guard sharesSnapshot else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .ioError }
        if info.st_nlink <= 1 {
            sharesSnapshot = false
            return
        }
        let fresh = path + ".unshared"
        unlink(fresh)
        let replacement = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard replacement >= 0 else { throw .ioError }
        defer { close(replacement) }
        var times = [info.st_atim, info.st_mtim]
        guard !copying || ContentDirectory.copyAll(from: descriptor, to: replacement),
              futimens(replacement, &times) == 0,
              rename(fresh, path) == 0 else {
            unlink(fresh)
            throw .ioError
        }
        // dup3 is not in Swift's Glibc module. Without FD_CLOEXEC for this moment the
        // descriptor could leak only into a program started meanwhile, and the daemon starts
        // one (libfuse's fusermount3) only at unmount, after the last request.
        guard dup2(replacement, descriptor) >= 0 else { throw .ioError }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        sharesSnapshot = false
    }

    func closeAndDelete(in content: ContentDirectory) {
        content.discardCopy(at: path, descriptor: descriptor)
        descriptor = -1
    }
}
