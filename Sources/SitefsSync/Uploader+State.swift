import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// What the uploader holds, for the filesystem (a file's state, a new file's content after a
/// restart) and for `sitefs status`/`sitefs sync`. Each read takes `condition`.
extension Uploader {
    /// The newest save recorded for an item (queued, in flight or failed), to restore a new
    /// file's content after a restart.
    public func latestSave(of identifier: ItemIdentifier) -> Job? {
        condition.lock()
        defer { condition.unlock() }
        return saves.newest(of: identifier)
    }

    /// Saves of files that are not on the server yet (restored into the mount's view at start).
    public var pendingCreations: [Job] {
        condition.lock()
        defer { condition.unlock() }
        return saves.all.filter(\.createsFile)
    }

    /// Snapshots the journal still refers to (everything else in staging is debris).
    public var stagedPaths: Set<String> {
        condition.lock()
        defer { condition.unlock() }
        let jobs = saves.all
        return Set(jobs.map(\.stagedPath) + jobs.compactMap(\.predecessor?.stagedPath))
    }

    /// True when `version` is one this mount's own last upload of the item replaced: a
    /// change-feed report of it arrives late and must not bring the old version back.
    public func replacedByOwnUpload(_ version: String, of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return saves.lastUploaded[identifier]?.base == version
    }

    /// True when `identifier` is a new file's local identifier whose create has finished.
    public func isRetiredCreation(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return identities.created(identifier) != nil
    }

    /// The item's newest save and whether it is still to be sent, read without `condition`
    /// (see `published`).
    func publishedSave(of identifier: ItemIdentifier) -> PublishedSave? {
        published.withLock { $0[identifier] }
    }

    /// Waits until no outcome of the item is being reported to the core: once this returns
    /// true, the core has applied the server's answer and `published` shows it. False when
    /// `timeout` passed first.
    public func waitUntilReported(_ identifier: ItemIdentifier, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while reporting[identifier] != nil {
            if !condition.wait(until: deadline) { return reporting[identifier] == nil }
        }
        return true
    }

    /// Where the item stands, read under one lock.
    func state(of identifier: ItemIdentifier) -> ItemSyncState {
        condition.lock()
        defer { condition.unlock() }
        return ItemSyncState(
            hasPendingSave: saves.isPending(identifier),
            isUploading: saves.inFlight[identifier] != nil,
            hasFailed: saves.failures[identifier] != nil && saves.queued[identifier] == nil,
            hasPendingRename: renames.isPending(identifier) || operations.isPending(identifier),
            mayBeOnServer: mayBeOnServerLocked(identifier))
    }

    /// Waits until nothing is queued or in flight (for `identifier`, or at all), saves and
    /// renames alike. False on timeout. Work waiting out the settle delay is made due.
    public func waitUntilIdle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        saves.makeDue(at: now, only: identifier)
        renames.makeDue(at: now, only: identifier)
        operations.expediteDeletes()
        condition.broadcast()
        while true {
            let busy = identifier.map { identifier in
                saves.isPending(identifier) || reporting[identifier] != nil || renames.isPending(identifier)
                    || operations.isPending(identifier)
            } ?? (!saves.isIdle || !reporting.isEmpty || !renames.isIdle || !operations.isIdle)
            if !busy { return true }
            settleWaiters += 1
            let woken = condition.wait(until: deadline)
            settleWaiters -= 1
            if !woken { return false }
        }
    }

    /// The whole queue, read under one lock: counts, progress, failures, records, the items
    /// not simply on the server (`busyItems`) and the callers blocked in `waitUntilIdle`.
    public var status: Status {
        condition.lock()
        defer { condition.unlock() }
        let progress = saves.inFlight.values.sorted { $0.name < $1.name }.map { job in
            Status.Progress(name: job.name, sent: min(saves.progress[job.identifier]?.sent ?? 0, job.size), total: job.size)
        }
        var status = Status(pending: saves.queued.count + saves.inFlight.count + renames.all.count + operations.count,
                            uploading: saves.inFlight.values.map(\.name).sorted(), progress: progress,
                            failed: saves.failures.values.map { Status.Failure(name: $0.job.name, reason: $0.reason) },
                            conflicts: records.conflicts, signInRequired: records.signInRequired)
        status.notApplied = records.notApplied
        status.remade = records.remadeFolders
        status.rescued = records.rescues
        status.journalProblem = journalProblemLocked
        // Every item with a save, rename or operation queued, in flight or failed.
        status.busyItems = Set(saves.queued.keys).union(saves.inFlight.keys).union(saves.failures.keys)
            .union(renames.all.map(\.identifier)).union(operations.all.map(\.identifier))
        status.settling = settleWaiters
        return status
    }
}
