import SitefsProvider
import Synchronization

/// The times a document server does not keep, kept by the mount for as long as it runs:
/// when a file was last read (atime), when an item's metadata last changed here (ctime: a
/// chmod, a rename, a new time set), and when a folder's entries last changed here (its
/// mtime and ctime: a create, unlink, rename or mkdir inside it). Each overlays the
/// server's modification time, which stands for all three where nothing here is newer, so
/// a fresh mount shows atime = ctime = mtime as before.
///
/// atime follows Linux's `relatime` rule, at each open for reading (the reads themselves
/// are often served from the kernel's page cache): it moves only when it is not already
/// after the last modification, or is a day old. Nothing here reaches the server or the disk: a remount
/// starts again from the server's times. Bounded: past `limit` items the table starts
/// afresh (times fall back to the server's, never to something wrong).
///
/// Lock order: a leaf (nothing else is taken while `table` is held).
final class LocalTimes: Sendable {
    struct Times {
        var access: TimeSpec?
        var change: TimeSpec?
        var modification: TimeSpec?
        /// A modification time set here, to the nanosecond: servers keep microseconds, so
        /// while the server's time is this one cut to them, this one is shown (`touch -d`
        /// and `utimensat` read back what they set).
        var exactModification: TimeSpec?
    }

    static let limit = 100_000
    private static let relatimeInterval: Int64 = 24 * 60 * 60
    private let table = Mutex<[ItemIdentifier: Times]>([:])

    /// `attributes` with this mount's times laid over the server's.
    func overlay(_ attributes: FileAttributes, of identifier: ItemIdentifier) -> FileAttributes {
        guard let times = table.withLock({ $0[identifier] }) else { return attributes }
        var result = attributes
        if let exact = times.exactModification, exact.seconds == result.modificationTime.seconds,
           exact.nanoseconds / 1000 == result.modificationTime.nanoseconds / 1000 {
            result.modificationTime = exact
        }
        if let modification = times.modification { result.modificationTime = Self.later(result.modificationTime, modification) }
        result.changeTime = Self.later(result.modificationTime, times.change ?? result.changeTime)
        result.accessTime = times.access ?? result.modificationTime
        return result
    }

    /// A read at `now` of a file last modified at `modified` (relatime).
    func read(_ identifier: ItemIdentifier, modified: TimeSpec, now: TimeSpec) {
        table.withLock { table in
            let access = table[identifier]?.access ?? modified
            guard !Self.isAfter(access, modified) || now.seconds - access.seconds >= Self.relatimeInterval else { return }
            Self.update(&table, identifier) { $0.access = now }
        }
    }

    /// utimensat's access time.
    func setAccess(_ identifier: ItemIdentifier, to time: TimeSpec, now: TimeSpec) {
        table.withLock { Self.update(&$0, identifier) { $0.access = time; $0.change = now } }
    }

    /// A modification time was set here (utimensat): its nanoseconds are kept, and it
    /// replaces a folder's time from entries changed before (`rsync -a` sets a folder's time
    /// after filling it).
    func setModification(_ identifier: ItemIdentifier, to time: TimeSpec, now: TimeSpec) {
        table.withLock {
            Self.update(&$0, identifier) {
                $0.exactModification = time
                $0.modification = nil
                $0.change = now
            }
        }
    }

    /// The item's metadata changed here (chmod, rename, times set): its ctime is `now`.
    func changed(_ identifier: ItemIdentifier, now: TimeSpec) {
        table.withLock { Self.update(&$0, identifier) { $0.change = now } }
    }

    /// An entry was added to or removed from the folder: its mtime and ctime are `now`.
    func entriesChanged(_ folder: ItemIdentifier?, now: TimeSpec) {
        guard let folder else { return }
        table.withLock { Self.update(&$0, folder) { $0.modification = now; $0.change = now } }
    }

    private static func update(_ table: inout [ItemIdentifier: Times], _ identifier: ItemIdentifier, _ change: (inout Times) -> Void) {
        if table[identifier] == nil, table.count >= limit { table.removeAll(keepingCapacity: true) }
        change(&table[identifier, default: Times()])
    }

    static func isAfter(_ lhs: TimeSpec, _ rhs: TimeSpec) -> Bool {
        lhs.seconds != rhs.seconds ? lhs.seconds > rhs.seconds : lhs.nanoseconds > rhs.nanoseconds
    }

    static func later(_ lhs: TimeSpec, _ rhs: TimeSpec) -> TimeSpec { isAfter(rhs, lhs) ? rhs : lhs }
}
