import SitefsAPI
import SitefsProvider

/// What the uploader must know of deletes made on the mount, so that a 404 met by one of
/// its uploads is read right: the file was deleted *here*, on purpose, and must not be made
/// again (a 404 from someone else's delete makes the edit win: the file is created again).
/// A value guarded by the uploader's `condition`; no I/O.
///
/// Three ways a file counts as deleted here:
/// - `sending`: its delete is on its way to the server right now (`Uploader.beginDelete` to
///   `endDelete`); of those, `journaled` are recorded in the journal because the file had
///   saves or a rename there (a restart then knows too). `journaled` ⊆ `sending`.
/// - `cancelledInFlight`: deleted while an upload of it was in flight; that upload's outcome
///   is dropped when it ends (`takeCancelled`).
/// - `beforeRestart`: a journaled delete an earlier run had started, with saves of the file
///   resumed; settled once no save of the file is left (`settleBeforeRestart`).
struct DeletionRecords {
    private(set) var sending: Set<ItemIdentifier> = []
    private(set) var journaled: Set<ItemIdentifier> = []
    private(set) var cancelledInFlight: Set<ItemIdentifier> = []
    private(set) var beforeRestart: Set<ItemIdentifier> = []

    /// True when an upload of the file meeting a 404 met this mount's own delete.
    func isDeletedHere(_ identifier: ItemIdentifier) -> Bool {
        cancelledInFlight.contains(identifier) || sending.contains(identifier) || beforeRestart.contains(identifier)
    }

    mutating func begin(_ identifier: ItemIdentifier, journaled isJournaled: Bool) {
        sending.insert(identifier)
        if isJournaled { journaled.insert(identifier) }
    }

    /// A save made while the delete is on its way: true when the delete must be journaled
    /// now (the file has a save in the journal from now on).
    func needsJournaling(_ identifier: ItemIdentifier) -> Bool {
        sending.contains(identifier) && !journaled.contains(identifier)
    }

    mutating func markJournaled(_ identifier: ItemIdentifier) {
        if sending.contains(identifier) { journaled.insert(identifier) }
    }

    /// The delete is over; true when it was journaled (its row is to be cleared).
    mutating func end(_ identifier: ItemIdentifier) -> Bool {
        sending.remove(identifier)
        return journaled.remove(identifier) != nil
    }

    mutating func cancelInFlight(_ identifier: ItemIdentifier) { cancelledInFlight.insert(identifier) }

    func isCancelledInFlight(_ identifier: ItemIdentifier) -> Bool { cancelledInFlight.contains(identifier) }

    /// True (once) when the upload that just ended was cancelled by a delete here.
    mutating func takeCancelled(_ identifier: ItemIdentifier) -> Bool { cancelledInFlight.remove(identifier) != nil }

    /// A journaled delete found at start whose file still has saves.
    mutating func resumeFromBeforeRestart(_ identifier: ItemIdentifier) { beforeRestart.insert(identifier) }

    func isFromBeforeRestart(_ identifier: ItemIdentifier) -> Bool { beforeRestart.contains(identifier) }

    /// The file has no save left: its delete from before the restart is settled (it reached
    /// the server, the saves met its 404 and went, or it never did). True when it was one,
    /// so its journal row is to be cleared.
    mutating func settleBeforeRestart(_ identifier: ItemIdentifier) -> Bool { beforeRestart.remove(identifier) != nil }
}
