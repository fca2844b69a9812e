import Foundation
import SitefsProvider
import SitefsStore

/// Polls the server's change feed and applies remote edits: metadata and listings are
/// updated, and the kernel is told to drop what it cached, so a file added on the server
/// appears without a remount. Invalidations are sent from this thread, with no lock held.
final class ChangeFeedPoller: @unchecked Sendable {
    private weak var filesystem: SitefsFilesystem?
    private let interval: Duration
    private let condition = NSCondition()
    private var stopped = false
    private var token: PageToken?
    private var polled = false
    private var thread: Thread?

    init(filesystem: SitefsFilesystem, interval: Duration) {
        self.filesystem = filesystem
        self.interval = interval
    }

    /// Key of the saved change-feed cursor in the metadata database.
    static let cursorKey = "change_cursor"

    func start() {
        // Resuming from the last mount's cursor brings its cached metadata up to date.
        token = filesystem?.metadata.value(for: Self.cursorKey).map(PageToken.init)
        let thread = Thread { [self] in run() }
        thread.name = "sitefs-changes"
        self.thread = thread
        thread.start()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    private func run() {
        while !sleep() {
            guard let filesystem else { return }
            do {
                var batch: ChangeBatch
                repeat {
                    batch = try filesystem.backend.changes(since: token)
                    if token != nil { apply(batch.changes, to: filesystem) }
                    token = batch.next
                    filesystem.metadata.setValue(batch.next.rawValue, for: Self.cursorKey)
                } while batch.hasMore
            } catch {
                filesystem.logger.debug("change feed: \(error)")
            }
        }
    }

    /// Waits one interval; true when stopped. The first call returns at once.
    private func sleep() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        defer { polled = true }
        if polled && !stopped {
            let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
            _ = condition.wait(until: Date().addingTimeInterval(seconds))
        }
        return stopped
    }

    private func apply(_ changes: [ChangeBatch.Change], to filesystem: SitefsFilesystem) {
        var entries: [(InodeNumber, String)] = []
        var inodes: [(InodeNumber, Bool)] = []
        let cache = filesystem.cache
        let table = filesystem.inodes
        for change in changes {
            switch change {
            case .updated(let serverItem):
                let item = filesystem.namespace.view(serverItem)  // renames not sent yet still show
                let previous = cache.item(item.identifier)
                // A new file of that name is being created here: this is that create (its
                // outcome brings the item in) or a file it will not overwrite (see
                // LocalNamespace.complete). Listing it now would show the name twice.
                if previous == nil, let parent = item.parent, filesystem.namespace.created(named: item.name, in: parent) != nil {
                    continue
                }
                // A report older than our own upload's answer (the feed lags): the version it
                // names is the one that upload replaced. Opening the file would fetch it.
                if let previous, previous.version != item.version,
                   filesystem.uploader.replacedByOwnUpload(item.version, of: item.identifier) {
                    continue
                }
                if let moved = cache.upsert(item), let parent = table.existingInode(for: moved.parent) {
                    entries.append((parent, moved.name))
                }
                if previous == nil, let parent = item.parent.flatMap(table.existingInode(for:)) {
                    entries.append((parent, item.name))  // a negative entry may be cached
                }
                if let inode = table.existingInode(for: item.identifier), previous != item {
                    inodes.append((inode, previous?.version != item.version))
                }
            case .deleted(let identifier):
                if let gone = cache.remove(identifier), let parent = table.existingInode(for: gone.parent) {
                    entries.append((parent, gone.name))
                }
            }
        }
        guard let invalidator = filesystem.invalidator.withLock({ $0 }) else { return }
        for (parent, name) in entries { invalidator.invalidateEntry(parent: parent, name: FileName(name)) }
        for (inode, contentChanged) in inodes { invalidator.invalidateInode(inode, offset: contentChanged ? 0 : -1, length: 0) }
    }
}
