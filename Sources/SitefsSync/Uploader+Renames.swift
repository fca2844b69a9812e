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
        var rename = rename
        if let earlier = renames[rename.identifier] {
            rename.serverName = earlier.serverName
            rename.serverParent = earlier.serverParent
        } else if let sending = renamesInFlight[rename.identifier] {
            rename.serverName = sending.name
            rename.serverParent = sending.parent
        }
        if rename.isNoOp {
            if renames.removeValue(forKey: rename.identifier) != nil {
                renameOrder.removeAll { $0 == rename.identifier }
                journal.dropRename(rename.identifier)
            }
            return
        }
        rename.afterOperation = lastOperationSequence
        try journal.recordRename(rename)
        rename.notBefore = clock.now + settleDelay
        if renames[rename.identifier] == nil { renameOrder.append(rename.identifier) }
        renames[rename.identifier] = rename
        condition.broadcast()
    }

    /// The rename the mount shows but the server does not have yet, if any.
    public func pendingRename(of identifier: ItemIdentifier) -> RenameJob? {
        condition.lock()
        defer { condition.unlock() }
        return renames[identifier] ?? renamesInFlight[identifier]
    }

    /// All renames not applied yet (the mount's view shows them).
    public var pendingRenames: [RenameJob] {
        condition.lock()
        defer { condition.unlock() }
        return renameOrder.compactMap { renames[$0] } + Array(renamesInFlight.values)
    }

    /// Drops a queued rename (the file's rename is folded into something else). False when
    /// it is in flight.
    public func cancelRename(of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if renamesInFlight[identifier] != nil { return false }
        if renames.removeValue(forKey: identifier) != nil {
            renameOrder.removeAll { $0 == identifier }
            journal.dropRename(identifier)
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
        for key in renames.keys { renames[key]!.notBefore = now }
        condition.broadcast()
        while !renames.isEmpty || !renamesInFlight.isEmpty {
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
        renamesInFlight[rename.identifier] = nil
        reporting[rename.identifier, default: 0] += 1
        if var follower = renames[rename.identifier] {
            // Renamed again meanwhile: that rename starts from where this one left the item.
            if case .renamed(_, let item) = outcome, let parent = item.parent {
                follower.serverName = item.name
                follower.serverParent = parent
                renames[rename.identifier] = follower
                try? journal.recordRename(follower)
            }
        } else {
            journal.dropRename(rename.identifier)
        }
        condition.broadcast()
    }
}
