import SitefsAPI
import SitefsProvider

/// Renames of server files made on the mount and not applied on the server yet. A value
/// guarded by the uploader's `condition`; no I/O.
///
/// What holds:
/// - `order` has each key of `queued` exactly once, in the order the file was first renamed,
///   and nothing else; renames go in that order, one at a time (a later one may take a name
///   an earlier one frees), so `inFlight` holds at most one.
/// - Per file at most one rename is queued: a newer one replaces it and starts from where
///   the server has the file (`serverName`/`serverParent` carried over, from the rename in
///   flight when there is one).
struct RenameQueue {
    private(set) var queued: [ItemIdentifier: Uploader.RenameJob] = [:]
    private(set) var order: [ItemIdentifier] = []
    private(set) var inFlight: [ItemIdentifier: Uploader.RenameJob] = [:]

    /// `rename` with where the server has the file now: from a rename still queued or being
    /// sent, else as given.
    func startingFromServer(_ rename: Uploader.RenameJob) -> Uploader.RenameJob {
        var rename = rename
        if let earlier = queued[rename.identifier] {
            rename.serverName = earlier.serverName
            rename.serverParent = earlier.serverParent
        } else if let sending = inFlight[rename.identifier] {
            rename.serverName = sending.name
            rename.serverParent = sending.parent
        }
        return rename
    }

    /// Queues a rename, replacing one of the same file (which keeps its place in the order).
    mutating func put(_ rename: Uploader.RenameJob) {
        if queued[rename.identifier] == nil { order.append(rename.identifier) }
        queued[rename.identifier] = rename
    }

    /// Drops a queued rename; false when none was queued.
    mutating func remove(_ identifier: ItemIdentifier) -> Bool {
        guard queued.removeValue(forKey: identifier) != nil else { return false }
        order.removeAll { $0 == identifier }
        return true
    }

    /// The rename of `identifier` if queued or being sent.
    func pending(of identifier: ItemIdentifier) -> Uploader.RenameJob? { queued[identifier] ?? inFlight[identifier] }

    func isPending(_ identifier: ItemIdentifier) -> Bool { pending(of: identifier) != nil }

    /// Queued in order, then the one being sent.
    var all: [Uploader.RenameJob] { order.compactMap { queued[$0] } + Array(inFlight.values) }

    var isIdle: Bool { queued.isEmpty && inFlight.isEmpty }

    /// The next rename to send: the first in order, when nothing is being sent.
    var next: Uploader.RenameJob? {
        guard inFlight.isEmpty, let first = order.first else { return nil }
        return queued[first]
    }

    /// Moves the first rename (`next`) into flight, as `sending` (its parent possibly
    /// resolved to a server folder).
    mutating func begin(_ sending: Uploader.RenameJob) {
        order.removeFirst()
        queued[sending.identifier] = nil
        inFlight[sending.identifier] = sending
    }

    /// The rename in flight is over; returns the file's next rename (made meanwhile), now
    /// starting from `serverItem` when the rename took.
    mutating func end(_ identifier: ItemIdentifier, serverItem: ProviderItem?) -> Uploader.RenameJob? {
        inFlight[identifier] = nil
        guard var follower = queued[identifier] else { return nil }
        if let serverItem, let parent = serverItem.parent {
            follower.serverName = serverItem.name
            follower.serverParent = parent
            queued[identifier] = follower
        }
        return follower
    }

    /// Everything queued (for `identifier`, or every file) is due at `now`.
    mutating func makeDue(at now: ContinuousClock.Instant, only identifier: ItemIdentifier? = nil) {
        queued.makeDue(at: now, only: identifier)
    }

    /// Queued renames made before the operation numbered `sequence` (see
    /// `RenameJob.afterOperation`); with `makingDue`, those are due at `now`.
    mutating func madeBefore(operation sequence: Int64, makingDueAt now: ContinuousClock.Instant) -> Bool {
        let before = order.filter { queued[$0]!.afterOperation < sequence }
        for identifier in before where queued[identifier]!.notBefore > now { queued[identifier]!.notBefore = now }
        return !before.isEmpty || inFlight.values.contains { $0.afterOperation < sequence }
    }

    /// Queued renames into the folder `local` now go into `folder`; returns the changed ones.
    mutating func retarget(from local: ItemIdentifier, to folder: ItemIdentifier) -> [Uploader.RenameJob] {
        var changed: [Uploader.RenameJob] = []
        for identifier in Array(queued.keys) where queued[identifier]!.parent == local {
            queued[identifier]!.parent = folder
            changed.append(queued[identifier]!)
        }
        return changed
    }

    /// When the first queued job not due at `now` will be.
    func earliestDue(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? { queued.earliestDue(after: now) }
}
