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
        return newestSaveLocked(identifier)
    }

    /// The newest save of an item: queued, else in flight, else failed. Call with `condition`
    /// locked.
    func newestSaveLocked(_ identifier: ItemIdentifier) -> Job? {
        queued[identifier] ?? inFlight[identifier] ?? failures[identifier]?.0
    }

    /// Saves of files that are not on the server yet (restored into the mount's view at start).
    public var pendingCreations: [Job] {
        condition.lock()
        defer { condition.unlock() }
        return (Array(queued.values) + Array(inFlight.values) + failures.values.map(\.0)).filter(\.createsFile)
    }

    /// Snapshots the journal still refers to (everything else in staging is debris).
    public var stagedPaths: Set<String> {
        condition.lock()
        defer { condition.unlock() }
        let jobs = Array(queued.values) + Array(inFlight.values) + failures.values.map(\.0)
        return Set(jobs.map(\.stagedPath) + jobs.compactMap(\.predecessor?.stagedPath))
    }

    /// True when `version` is one this mount's own last upload of the item replaced: a
    /// change-feed report of it arrives late and must not bring the old version back.
    public func replacedByOwnUpload(_ version: String, of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return lastUploaded[identifier]?.base == version
    }

    /// True when `identifier` is a new file's local identifier whose create has finished.
    public func isRetiredCreation(_ identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return retiredCreations[identifier] != nil
    }

    /// The item's newest save and whether it is still to be sent, read without `condition`
    /// (see `published`).
    func publishedSave(of identifier: ItemIdentifier) -> PublishedSave? {
        published.withLock { $0[identifier] }
    }

    /// Callers blocked in `waitUntilIdle` now.
    var settleWaiterCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return settleWaiters
    }

    /// Every item with a save or rename queued, in flight or failed: the ones whose state is
    /// not simply "on the server".
    var busyItems: Set<ItemIdentifier> {
        condition.lock()
        defer { condition.unlock() }
        var items = Set(queued.keys).union(inFlight.keys).union(failures.keys).union(renames.keys).union(renamesInFlight.keys)
        items.formUnion(operations.map(\.identifier))
        if let operationInFlight { items.insert(operationInFlight.identifier) }
        return items
    }

    /// Where the item stands, read under one lock.
    func state(of identifier: ItemIdentifier) -> ItemSyncState {
        condition.lock()
        defer { condition.unlock() }
        return ItemSyncState(
            hasPendingSave: queued[identifier] != nil || inFlight[identifier] != nil,
            isUploading: inFlight[identifier] != nil,
            hasFailed: failures[identifier] != nil && queued[identifier] == nil,
            hasPendingRename: renames[identifier] != nil || renamesInFlight[identifier] != nil
                || operationInFlight?.identifier == identifier || operations.contains { $0.identifier == identifier },
            mayBeOnServer: mayBeOnServerLocked(identifier))
    }

    /// Waits until nothing is queued or in flight (for `identifier`, or at all), saves and
    /// renames alike. False on timeout. Work waiting out the settle delay is made due.
    public func waitUntilIdle(_ identifier: ItemIdentifier? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        if let identifier {
            queued[identifier]?.notBefore = now
            renames[identifier]?.notBefore = now
        } else {
            for key in queued.keys { queued[key]!.notBefore = now }
            for key in renames.keys { renames[key]!.notBefore = now }
        }
        condition.broadcast()
        while true {
            let busy = identifier.map { identifier in
                queued[identifier] != nil || inFlight[identifier] != nil || reporting[identifier] != nil
                    || renames[identifier] != nil || renamesInFlight[identifier] != nil
                    || operationInFlight?.identifier == identifier || operations.contains { $0.identifier == identifier }
            } ?? (!queued.isEmpty || !inFlight.isEmpty || !reporting.isEmpty || !renames.isEmpty || !renamesInFlight.isEmpty
                  || !operations.isEmpty || operationInFlight != nil)
            if !busy { return true }
            settleWaiters += 1
            let woken = condition.wait(until: deadline)
            settleWaiters -= 1
            if !woken { return false }
        }
    }

    public var status: Status {
        condition.lock()
        defer { condition.unlock() }
        let progress = inFlight.values.sorted { $0.name < $1.name }.map { job in
            Status.Progress(name: job.name, sent: min(sent[job.identifier]?.sent ?? 0, job.size), total: job.size)
        }
        var status = Status(pending: queued.count + inFlight.count + renames.count + renamesInFlight.count
                                + operations.count + (operationInFlight == nil ? 0 : 1),
                            uploading: inFlight.values.map(\.name).sorted(), progress: progress,
                            failed: failures.values.map { Status.Failure(name: $0.0.name, reason: $0.1) },
                            conflicts: conflicts, signInRequired: signInRequired)
        status.notApplied = operationsNotApplied
        status.remade = remadeFolders
        status.rescued = rescues
        return status
    }
}
