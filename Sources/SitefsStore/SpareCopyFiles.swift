import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Emptied local-copy files kept to become the next new copies: a new copy then costs a
/// rename instead of an inode allocated, and a discarded copy a truncation instead of an
/// inode freed.
///
/// A new file on the mount gets a local copy, deleted once the server has the file, so a
/// program making 1,000 files allocated and freed 1,000 inodes in the cache folder. ext4
/// without a journal (the bench VM's disk) does not reuse an inode freed in the last minute
/// (five while its inode table block is unwritten): every allocation in the group reads
/// past each such inode's time, so each new file cost more than the one before. In a loop
/// of 1,000 creates that was a tenth to a half of the daemon's CPU (`perf`: the kernel's
/// `find_inode_bit` and `recently_deleted` under the copy's `open`).
///
/// Copies of new files are discarded as their uploads finish and taken again by the creates
/// that follow, so the pool grows to what a burst of creates runs ahead of its uploads and
/// serves the next burst (and the next mount: `adopt`). While it is below `capacity`
/// nothing is freed, so an inode that must still be allocated meets no freshly freed one.
///
/// What holds for a spare: an empty regular file with one link, mode 0600 (as every copy is
/// made), named `spare-N` in the content folder, where no copy's name can clash (those are
/// hex digits and a dash). Each takes an inode and no block.
final class SpareCopyFiles: Sendable {
    static let capacity = 1_024
    /// Larger files are not kept: truncating frees their blocks there and then, which the
    /// unlinker does in the background for a file deleted (see `BackgroundUnlinker`).
    static let largestKept: Int64 = 1 << 20

    private struct State {
        var spares: [String] = []
        /// Being made spares now (counted against `capacity`).
        var arriving = 0
        /// Numbers given out, for unique names.
        var numbered = 0
    }

    /// Lock order: a leaf. Held only to take or hand back a name, never across a system call.
    private let state = Mutex(State())
    private let folder: String

    init(folder: String) {
        self.folder = folder
    }

    /// Spares kept now (tests).
    var count: Int { state.withLock { $0.spares.count } }

    /// Whether `name` (in the content folder) is a spare's.
    static func isSpare(named name: String) -> Bool { name.hasPrefix("spare-") }

    /// Takes in the spares an earlier mount left, at mount before any copy is made: each
    /// that is what a spare must be is kept (up to `capacity`), any other deleted; new
    /// spares are numbered after them.
    func adopt(_ names: [String]) {
        var adopted: [String] = []
        var highest = 0
        for name in names where Self.isSpare(named: name) {
            let path = folder + "/" + name
            var info = stat()
            guard adopted.count < Self.capacity, lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  info.st_mode & 0o7777 == 0o600, info.st_nlink == 1, info.st_size == 0,
                  let number = Int(name.dropFirst("spare-".count)), number > 0
            else {
                unlink(path)
                continue
            }
            adopted.append(path)
            highest = max(highest, number)
        }
        state.withLock { state in
            state.spares.append(contentsOf: adopted)
            state.numbered = max(state.numbered, highest)
        }
    }

    /// Makes the file at `path`, open as `descriptor` (the caller closes it), a spare when it
    /// can be: a regular file of mode 0600 and at most `largestKept` bytes with no other
    /// link (a staged snapshot hard-linked to it keeps its bytes), while fewer than
    /// `capacity` are kept. Returns false otherwise, and when truncating or renaming fails:
    /// the caller deletes the file then.
    func keep(_ path: String, descriptor: Int32) -> Bool {
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              info.st_mode & 0o7777 == 0o600, info.st_nlink == 1, Int64(info.st_size) <= Self.largestKept
        else { return false }
        let number = state.withLock { state -> Int? in
            guard state.spares.count + state.arriving < Self.capacity else { return nil }
            state.arriving += 1
            state.numbered += 1
            return state.numbered
        }
        guard let number else { return false }
        let spare = folder + "/spare-\(number)"  // see `isSpare(named:)`
        let kept = ftruncate(descriptor, 0) == 0 && rename(path, spare) == 0
        state.withLock { state in
            state.arriving -= 1
            if kept { state.spares.append(spare) }
        }
        return kept
    }

    /// A spare renamed to `path` (which must not exist), open read and write and dated now,
    /// as a file just made is; nil when none is kept, or it is not what a spare must be (it
    /// is deleted then).
    func take(as path: String) -> Int32? {
        guard let spare = state.withLock({ $0.spares.popLast() }) else { return nil }
        guard rename(spare, path) == 0 else {
            unlink(spare)
            return nil
        }
        let descriptor = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_nlink == 1,
              info.st_size == 0, futimens(descriptor, nil) == 0
        else {
            if descriptor >= 0 { close(descriptor) }
            unlink(path)
            return nil
        }
        return descriptor
    }
}
