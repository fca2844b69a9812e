import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SitefsConcurrency

/// Polls the server's change feed and applies remote edits: metadata and listings are
/// updated, and the kernel is told to drop what it cached, so a file added on the server
/// appears without a remount. Invalidations are sent from this thread, with no lock held.
final class ChangeFeedPoller: @unchecked Sendable {
    private weak var filesystem: SitefsFilesystem?
    private let interval: Duration
    /// What the wait between rounds runs on (manual in tests).
    private let clock: MountClock
    private let condition = NSCondition()
    private var stopped = false
    private var token: PageToken?
    private var polled = false
    /// Consecutive rounds that ended badly (an error, a repeated cursor): the wait before the
    /// next one doubles with each, up to `longestBackoff`. Touched by the polling thread only.
    private var failedRounds = 0
    /// Rounds in a row that found the mount offline (one probe each): they set the wait while
    /// offline, and count for nothing once the server is back, so the feed does not then
    /// sleep out a backoff earned while the network was down. Touched by the polling thread only.
    private var offlineRounds = 0
    /// The last round's first request was held by the server until there was a change (or
    /// for the whole wait): the next round may start at once, a request already waiting for
    /// the next change. False after a server that answered an empty feed early (it does not
    /// long-poll): then rounds come every interval. Touched by the polling thread only.
    private var serverHeldLastRound = false
    /// The least time between long-poll rounds, so a feed that changes all the time costs
    /// at most a few requests a second.
    static let longPollGap: Duration = .milliseconds(100)
    /// Batches one round takes at most; a feed with more goes on in the next round.
    static let batchesPerRound = 100
    static let longestBackoff: Duration = .seconds(30)
    static let longestOfflineWait: Duration = .seconds(5)
    private var thread: Thread?

    /// How long the first request of a round may wait for a change (zero: no long-poll).
    private let changeWait: Duration

    init(filesystem: SitefsFilesystem, interval: Duration, changeWait: Duration, clock: MountClock) {
        self.filesystem = filesystem
        self.interval = interval
        self.changeWait = changeWait
        self.clock = clock
    }

    /// Whether `stop()` was called: ends a long-poll in flight (within about a second).
    private var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
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
            pollOnce()
        }
    }

    /// One round: every batch the feed has now, applied. Called by the poller's thread, or by
    /// a test that never started it.
    func pollOnce() {
        guard let filesystem else { return }
        if filesystem.backend.monitor.offlineSince != nil {
            // Offline: first ask whether the server is back (a WebDAV feed sends no request of
            // its own), so reconnecting needs nobody to act; still away, the round ends here.
            filesystem.backend.probe()
            guard filesystem.backend.monitor.offlineSince == nil else {
                offlineRounds += 1
                return
            }
        }
        offlineRounds = 0
        serverHeldLastRound = false
        let longPoll = token != nil && changeWait > .zero && filesystem.backend.waitsForChanges
        do {
            var batch: ChangeBatch
            var batches = 0
            repeat {
                // Registered before it is sent: a batch asked for before this mount changed an
                // item (deleted, renamed, saved it) describes the item as it was, and must not
                // undo that change when it is applied (see ServerRead).
                let read = filesystem.cache.beginRead()
                defer { filesystem.cache.endRead(read) }
                if longPoll && batches == 0 {
                    // Real time, not the mount's clock: this is how long the server held it.
                    let sent = ContinuousClock.now
                    batch = try filesystem.backend.changes(since: token, waitingUpTo: changeWait,
                                                           cancellation: Cancellation { [weak self] in self?.isStopped ?? true })
                    serverHeldLastRound = !batch.changes.isEmpty || ContinuousClock.now - sent >= changeWait * 0.8
                } else {
                    batch = try filesystem.backend.changes(since: token)
                }
                for reason in batch.refused { filesystem.logger.warning("change feed: a report is left out: \(reason)") }
                if token != nil { apply(batch.changes, asOf: read, to: filesystem) }
                if batch.hasMore, batch.next == token {
                    // "More" from the very cursor it was asked with: asking again would spin.
                    filesystem.logger.error("change feed: the server says there is more but repeats its cursor; polling backs off")
                    failedRounds += 1
                    return
                }
                token = batch.next
                filesystem.metadata.setValue(batch.next.rawValue, for: Self.cursorKey)
                batches += 1
            } while batch.hasMore && batches < Self.batchesPerRound
            failedRounds = 0
            // The round that took the first cursor: the next one can wait at the server at once.
            if !longPoll, changeWait > .zero, filesystem.backend.waitsForChanges { serverHeldLastRound = true }
        } catch {
            filesystem.logger.debug("change feed: \(error)")
            failedRounds += 1
        }
    }

    /// The wait before the next round: the interval, doubled for each round in a row that
    /// ended badly, at most `longestBackoff` (or the interval, if that is longer).
    var nextWait: Duration {
        if serverHeldLastRound { return Self.longPollGap }
        if filesystem?.backend.monitor.offlineSince != nil {
            // Offline, each round is one small probe: it keeps coming often enough that the
            // mount finds the server back within seconds.
            let doubled = interval * (1 << min(offlineRounds, 16))
            return max(interval, min(doubled, Self.longestOfflineWait))
        }
        guard failedRounds > 0 else { return interval }
        let doubled = interval * (1 << min(failedRounds, 16))
        return max(interval, min(doubled, Self.longestBackoff))
    }

    /// Waits one interval; true when stopped. The first call returns at once.
    private func sleep() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        defer { polled = true }
        if polled {
            let deadline = clock.now + nextWait
            while !stopped && clock.now < deadline { clock.wait(on: condition, until: deadline) }
        }
        return stopped
    }

    /// Kernel caches to drop once a batch is applied.
    private struct Invalidations {
        var entries: [(InodeNumber, String)] = []
        var inodes: [(InodeNumber, Bool)] = []
    }

    private func apply(_ changes: [ChangeBatch.Change], asOf read: ServerRead, to filesystem: SitefsFilesystem) {
        var invalidations = Invalidations()
        var overtaken: [ItemIdentifier] = []
        for change in changes {
            switch change {
            case .updated(let serverItem):
                if !apply(serverItem, asOf: read, to: filesystem, invalidating: &invalidations),
                   !Self.isAsCached(serverItem, in: filesystem) {
                    overtaken.append(serverItem.identifier)
                }
            case .deleted(let identifier):
                // Final whenever it was asked for: a server id is never used again.
                if let gone = filesystem.cache.remove(identifier), let parent = filesystem.inodes.existingInode(for: gone.parent) {
                    invalidations.entries.append((parent, gone.name))
                }
            }
        }
        refresh(overtaken, in: filesystem, invalidating: &invalidations)
        // Pinned files changed or added on the server are downloaded again (the keeper skips
        // what is current, so a change elsewhere costs a walk of the cache).
        if !changes.isEmpty, !filesystem.sync.pins.pinned.isEmpty { filesystem.keeper.request() }
        guard let invalidator = filesystem.invalidator.withLock({ $0 }) else { return }
        for (parent, name) in invalidations.entries { invalidator.invalidateEntry(parent: parent, name: FileName(name)) }
        for (inode, contentChanged) in invalidations.inodes {
            invalidator.invalidateInode(inode, offset: contentChanged ? 0 : -1, length: 0)
        }
    }

    /// Whether an overtaken report says exactly what the cache holds: most often this mount's
    /// own save or rename, reported while a long-poll that began before it was held. Nothing
    /// can have been missed then (someone else's later change has a feed entry of its own),
    /// so the item is not asked for again.
    private static func isAsCached(_ reported: ProviderItem, in filesystem: SitefsFilesystem) -> Bool {
        guard let cached = filesystem.cache.item(reported.identifier) else { return false }
        return cached.version == reported.version && cached.parent == reported.parent && ItemName.same(cached.name, reported.name)
    }

    /// Reports overtaken by a change made here are older than the cache, or describe the
    /// item after that change, and perhaps after someone else's later one too: the items
    /// still known (not deleted here) are asked for again, once, so the latter is not missed.
    /// At most one request per item of the batch.
    private func refresh(_ overtaken: [ItemIdentifier], in filesystem: SitefsFilesystem, invalidating invalidations: inout Invalidations) {
        for identifier in Set(overtaken) where filesystem.cache.item(identifier) != nil {
            let read = filesystem.cache.beginRead()
            defer { filesystem.cache.endRead(read) }
            do throws(ProviderError) {
                let item = try filesystem.backend.item(identifier)
                _ = apply(item, asOf: read, to: filesystem, invalidating: &invalidations)
            } catch .notFound {
                if let gone = filesystem.cache.remove(identifier), let parent = filesystem.inodes.existingInode(for: gone.parent) {
                    invalidations.entries.append((parent, gone.name))
                }
            } catch {
                filesystem.logger.debug("change feed: refreshing \(identifier): \(error)")
            }
        }
    }

    /// Applies one reported item; false when the report was overtaken by a change made here
    /// after `read` began (and so not applied).
    private func apply(_ serverItem: ProviderItem, asOf read: ServerRead, to filesystem: SitefsFilesystem,
                       invalidating invalidations: inout Invalidations) -> Bool {
        let cache = filesystem.cache
        let table = filesystem.inodes
        // As the mount shows it (renames not sent yet still show); nil when the mount must
        // not show it now: removed here, the removal still queued; the create of a new file
        // of that name here; a version this mount's own upload replaced (see
        // `SyncEngine.view(report:known:)`).
        let known = cache.item(serverItem.identifier)
        guard let item = filesystem.sync.view(report: serverItem, known: known) else { return true }
        guard case .stored(let previous, let moved) = cache.upsert(item, asOf: read) else { return false }
        if let moved, let parent = table.existingInode(for: moved.parent) {
            invalidations.entries.append((parent, moved.name))
        }
        // New here: a negative entry for its name may be cached. Not for an item the kernel
        // already has an inode for (its cache forgotten, or just made here): its entry is
        // right, and dropping a folder's entry unhashes it under every process whose working
        // directory it is (getcwd then fails with ENOENT: `cd new-folder && git init`).
        if previous == nil, table.existingInode(for: item.identifier) == nil,
           let parent = item.parent.flatMap(table.existingInode(for:)) {
            invalidations.entries.append((parent, item.name))
        }
        if let inode = table.existingInode(for: item.identifier), previous != item {
            invalidations.inodes.append((inode, previous?.version != item.version))
        }
        return true
    }
}
