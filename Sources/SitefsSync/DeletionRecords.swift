import SitefsAPI
import SitefsProvider

/// What the uploader must know of deletes made on the mount, so that a 404 met by one of
/// its uploads is read right: the file was deleted *here*, on purpose, and must not be made
/// again (a 404 from someone else's delete makes the edit win: the file is created again).
/// A value guarded by the uploader's `condition`; no I/O. (A delete itself is a queued
/// `NamespaceOperation`, conditional on the version the mount showed.)
///
/// Two ways a file counts as deleted here:
/// - `cancelledInFlight`: deleted while an upload of it was in flight; that upload's outcome
///   is dropped when it ends (`takeCancelled`).
/// - `beforeRestart`: a delete an earlier run had recorded (in the journal's `deletes` table,
///   which older runs wrote), with saves of the file resumed; settled once no save of the
///   file is left (`settleBeforeRestart`).
///
/// `unanswered`: the snapshot of a cancelled upload that ended without an answer (a reset
/// after the server stored it), kept while the file's delete is pending. That delete meets a
/// version the mount never learnt; its bytes tell whether it is this mount's own save (the
/// delete goes) or someone else's edit (kept). Its journal row went at the cancel, so a
/// restart removes the file with the other leftovers of staging.
struct DeletionRecords {
    private(set) var cancelledInFlight: Set<ItemIdentifier> = []
    private(set) var beforeRestart: Set<ItemIdentifier> = []
    private(set) var unanswered: [ItemIdentifier: UnansweredSave] = [:]

    /// A snapshot the server may hold with no answer having said so.
    struct UnansweredSave: Equatable {
        let stagedPath: String
        let size: Int64
    }

    /// True when an upload of the file meeting a 404 met this mount's own delete.
    func isDeletedHere(_ identifier: ItemIdentifier) -> Bool {
        cancelledInFlight.contains(identifier) || beforeRestart.contains(identifier)
    }

    mutating func cancelInFlight(_ identifier: ItemIdentifier) { cancelledInFlight.insert(identifier) }

    func isCancelledInFlight(_ identifier: ItemIdentifier) -> Bool { cancelledInFlight.contains(identifier) }

    /// True (once) when the upload that just ended was cancelled by a delete here.
    mutating func takeCancelled(_ identifier: ItemIdentifier) -> Bool { cancelledInFlight.remove(identifier) != nil }

    /// Keeps the snapshot of a cancelled upload that may have reached the server; returns
    /// the one it replaces, if any, whose file is to go.
    mutating func keepUnanswered(_ save: UnansweredSave, of identifier: ItemIdentifier) -> UnansweredSave? {
        unanswered.updateValue(save, forKey: identifier)
    }

    /// The file's delete is over: its unanswered snapshot, if any, whose file is to go.
    mutating func takeUnanswered(_ identifier: ItemIdentifier) -> UnansweredSave? { unanswered.removeValue(forKey: identifier) }

    /// A journaled delete found at start whose file still has saves.
    mutating func resumeFromBeforeRestart(_ identifier: ItemIdentifier) { beforeRestart.insert(identifier) }

    func isFromBeforeRestart(_ identifier: ItemIdentifier) -> Bool { beforeRestart.contains(identifier) }

    /// The file has no save left: its delete from before the restart is settled (it reached
    /// the server, the saves met its 404 and went, or it never did). True when it was one,
    /// so its journal row is to be cleared.
    mutating func settleBeforeRestart(_ identifier: ItemIdentifier) -> Bool { beforeRestart.remove(identifier) != nil }
}
