import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// Renames of server files made on the mount, queued like saves so that an editor's
/// rename-away within the settle delay can still fold into a new version (see RenameAttempt).
extension Uploader {
    /// Queues a rename of a server file (durable when this returns). A rename of the same
    /// file still queued is replaced; one back to where the server has it cancels it.
    public func enqueueRename(_ rename: RenameJob) throws {
        condition.lock()
        defer { condition.unlock() }
        var rename = renames.startingFromServer(rename)
        if rename.isNoOp {
            if renames.remove(rename.identifier) { write(.dropRename(rename.identifier)) }
            return
        }
        rename.afterOperation = operations.lastSequence
        do {
            try journal.recordRename(rename)
            unwrittenJournal.written(.rename(rename.identifier))
            journalWrittenLocked()
        } catch {
            journalFailedLocked("the rename of \(rename.serverName)", error, refused: true)
            throw error
        }
        rename.notBefore = clock.now + delays.rename(to: rename.name)
        renames.put(rename)
        condition.broadcast()
    }

    /// The rename the mount shows but the server does not have yet, if any.
    public func pendingRename(of identifier: ItemIdentifier) -> RenameJob? {
        condition.lock()
        defer { condition.unlock() }
        return renames.pending(of: identifier)
    }

    /// All renames not applied yet (the mount's view shows them).
    public var pendingRenames: [RenameJob] {
        condition.lock()
        defer { condition.unlock() }
        return renames.all
    }

    /// Drops a queued rename (the file's rename is folded into something else). False when
    /// it is in flight.
    public func cancelRename(of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if renames.inFlight[identifier] != nil { return false }
        if renames.remove(identifier) {
            write(.dropRename(identifier))
            condition.broadcast()
        }
        return true
    }

    /// Applies every queued rename now and waits for them (before a change made on the server
    /// at once, which must see them). False on timeout.
    public func flushRenames(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        renames.makeDue(at: now)
        condition.broadcast()
        while !renames.isIdle {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Bookkeeping once a rename is over. Call with `condition` locked.
    func finishRename(_ outcome: RenameOutcome) {
        let rename: RenameJob
        switch outcome {
        case .renamed(let job, _), .dropped(let job, _): rename = job
        }
        reporting[rename.identifier, default: 0] += 1
        var renamedTo: ProviderItem?
        if case .renamed(_, let item) = outcome { renamedTo = item }
        if let follower = renames.end(rename.identifier, serverItem: renamedTo) {
            // Renamed again meanwhile: that rename starts from where this one left the item.
            if renamedTo?.parent != nil { write(.putRename(follower)) }
        } else {
            write(.dropRename(rename.identifier))
        }
        condition.broadcast()
    }
}
