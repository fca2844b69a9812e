import Foundation
import SitefsAPI
import SitefsProvider

/// A journal write the uploader makes after its queues have changed. Each sets the whole
/// state of one row or removes it, so a later write to the same row supersedes an earlier
/// one, and one that failed can be made again as it is.
///
/// What a write that cannot commit (disk full, I/O error, a read-only remount) leads to:
/// it is kept and tried again every `Uploader.journalRetryInterval` and at unmount; the
/// mount says so in `sitefs status` and with a desktop notification; and until it is made,
/// a restart replays the journal as it was, which never loses an edit:
/// - `dropSave`, `confirm`: the snapshot file stays with its row (the journal never names a
///   missing file); a restart sends it again, which the server's copy of the same bytes
///   turns into "already uploaded", or a conflict copy at worst.
/// - `updateSave`: a restart creates a new file under the name it had before the rename, or
///   tries a failed save once more.
/// - `clearDelete`: a restart reads a 404 of the file as this mount's own delete.
/// - `putRename`, `dropRename`, `updateOperation`, `finishOperation`: a restart applies the
///   rename or operation as the journal had it (a mkdir replayed joins the folder it made,
///   a delete replayed finds the file gone).
/// Saves themselves (`UploadJournal.record`) are not among these: a save that cannot be
/// recorded fails the caller's close()/fsync(), so nothing unrecorded is ever acknowledged.
enum JournalWrite: Sendable {
    case dropSave(stagedPath: String)
    case updateSave(SaveJob, failure: String?)
    case confirm(SaveJob, version: String, follower: SaveJob?)
    case clearDelete(ItemIdentifier)
    case putRename(Uploader.RenameJob)
    case dropRename(ItemIdentifier)
    case updateOperation(NamespaceOperation)
    case finishOperation(NamespaceOperation, madeFolder: ItemIdentifier?)

    /// The row a write sets.
    enum Row: Hashable, Sendable {
        case save(String)
        case delete(ItemIdentifier)
        case rename(ItemIdentifier)
        case operation(Int64)
    }

    var row: Row {
        switch self {
        case .dropSave(let path): .save(path)
        case .updateSave(let job, _), .confirm(let job, _, _): .save(job.stagedPath)
        case .clearDelete(let identifier): .delete(identifier)
        case .putRename(let rename): .rename(rename.identifier)
        case .dropRename(let identifier): .rename(identifier)
        case .updateOperation(let operation), .finishOperation(let operation, _): .operation(operation.sequence)
        }
    }

    /// The snapshot file that may go once the write is made.
    var releasedSnapshot: String? {
        switch self {
        case .dropSave(let path): path
        case .confirm(let job, _, _): job.stagedPath
        default: nil
        }
    }

    func apply(to journal: UploadJournal) throws {
        switch self {
        case .dropSave(let path): try journal.drop(stagedPath: path)
        case .updateSave(let job, let failure): try journal.update(job, failure: failure)
        case .confirm(let job, let version, let follower): try journal.confirmed(job, producing: version, rekeyed: follower)
        case .clearDelete(let identifier): try journal.clearDelete(identifier)
        case .putRename(let rename): try journal.recordRename(rename)
        case .dropRename(let identifier): try journal.dropRename(identifier)
        case .updateOperation(let operation): try journal.update(operation)
        case .finishOperation(let operation, let made): try journal.finished(operation, madeFolder: made)
        }
    }
}

/// Journal writes that failed, by row, in the order first owed, with why. A value guarded
/// by the uploader's `condition`. What holds: one write per row (the newest: see
/// `JournalWrite`); `retryAt` is set exactly when some write is owed.
struct UnwrittenJournal {
    private(set) var owed: [JournalWrite.Row: (write: JournalWrite, keepSnapshot: Bool)] = [:]
    private(set) var order: [JournalWrite.Row] = []
    /// Why the last write that failed failed; nil once the journal takes writes again.
    private(set) var trouble: String?
    private(set) var retryAt: ContinuousClock.Instant?

    var count: Int { owed.count }

    /// A write to `row` was made: anything owed for it is superseded.
    mutating func written(_ row: JournalWrite.Row) {
        guard owed.removeValue(forKey: row) != nil else { return }
        order.removeAll { $0 == row }
        if owed.isEmpty { retryAt = nil }
    }

    mutating func owe(_ write: JournalWrite, keepSnapshot: Bool, retryAt time: ContinuousClock.Instant) {
        if owed[write.row] == nil { order.append(write.row) }
        owed[write.row] = (write, keepSnapshot)
        retryAt = time
    }

    /// Records why a write failed; true when this starts a spell of trouble.
    mutating func failed(_ reason: String) -> Bool {
        defer { trouble = reason }
        return trouble == nil
    }

    /// A write went through and nothing is owed: true when this ends a spell of trouble.
    mutating func healthy() -> Bool {
        guard trouble != nil, owed.isEmpty else { return false }
        trouble = nil
        return true
    }

    /// The owed writes, oldest first.
    var pending: [(write: JournalWrite, keepSnapshot: Bool)] { order.compactMap { owed[$0] } }

    mutating func postpone(until time: ContinuousClock.Instant) { if !owed.isEmpty { retryAt = time } }
}

extension Uploader {
    /// How often journal writes that failed are tried again.
    static let journalRetryInterval: Duration = .seconds(5)

    /// Makes a journal write that follows a change of the queues (see `JournalWrite` for what
    /// a failure leads to). A snapshot the write releases is deleted once it is made, unless
    /// `keepingSnapshot` (an upload still reads it). Call with `condition` locked.
    func write(_ write: JournalWrite, keepingSnapshot: Bool = false) {
        do {
            try write.apply(to: journal)
            unwrittenJournal.written(write.row)
            if !keepingSnapshot, let snapshot = write.releasedSnapshot { unlinker.delete(snapshot) }
            journalWrittenLocked()
        } catch {
            unwrittenJournal.owe(write, keepSnapshot: keepingSnapshot, retryAt: clock.now + Self.journalRetryInterval)
            journalFailedLocked(Self.describe(write), error)
            condition.broadcast()  // a worker sleeping without a deadline now has one
        }
    }

    /// The rows of finished operations dropped in one commit (an rmdir and the deletes it
    /// carried); when that fails, each is owed on its own. Call with `condition` locked.
    func writeFinished(_ finished: [NamespaceOperation]) {
        do {
            try journal.finished(finished)
            for operation in finished { unwrittenJournal.written(.operation(operation.sequence)) }
            journalWrittenLocked()
        } catch {
            for operation in finished {
                unwrittenJournal.owe(.finishOperation(operation, madeFolder: nil), keepSnapshot: false,
                                     retryAt: clock.now + Self.journalRetryInterval)
            }
            journalFailedLocked("\(finished.count) finished deletes", error)
            condition.broadcast()
        }
    }

    /// Tries the owed journal writes again, oldest first, stopping at the first that still
    /// fails. Call with `condition` locked.
    func retryUnwrittenLocked() {
        for (write, keep) in unwrittenJournal.pending {
            do {
                try write.apply(to: journal)
            } catch {
                unwrittenJournal.postpone(until: clock.now + Self.journalRetryInterval)
                _ = unwrittenJournal.failed(Self.troubleReason(error))
                return
            }
            unwrittenJournal.written(write.row)
            if !keep, let snapshot = write.releasedSnapshot { unlinker.delete(snapshot) }
        }
        journalWrittenLocked()
    }

    /// A journal write failed: logged, shown in `sitefs status`, and told once per spell of
    /// trouble through `onJournalTrouble`, off the lock. `refused`: the caller is told it
    /// failed (nothing was changed); otherwise the write is owed. Call with `condition` locked.
    func journalFailedLocked(_ what: String, _ error: any Error, refused: Bool = false) {
        let reason = Self.troubleReason(error)
        if refused {
            logger.error("\(what) failed: \(reason)")
        } else {
            logger.error("\(reason): \(what) is not recorded yet; \(unwrittenJournal.count) changes wait to be recorded")
        }
        if unwrittenJournal.failed(reason), let report = onJournalTrouble {
            DispatchQueue.global().async { report(reason) }
        }
    }

    /// A journal write went through: a spell of trouble ends once nothing is owed. Call with
    /// `condition` locked.
    func journalWrittenLocked() {
        guard unwrittenJournal.healthy() else { return }
        logger.notice("the upload journal can be written again; every change is recorded")
        if let report = onJournalTrouble { DispatchQueue.global().async { report(nil) } }
    }

    /// For `sitefs status`: why the journal cannot be written and what waits, nil when fine.
    var journalProblemLocked: String? {
        unwrittenJournal.trouble.map { reason in
            let owed = unwrittenJournal.count
            return reason + (owed > 0 ? "; \(owed) changes wait to be recorded" : "") + "; saves fail while it cannot be written"
        }
    }

    /// What `sitefs status` and the notification say is wrong.
    private static func troubleReason(_ error: any Error) -> String { "the upload journal cannot be written (\(error))" }

    private static func describe(_ write: JournalWrite) -> String {
        switch write {
        case .dropSave: "a finished save"
        case .updateSave(let job, _): "the save of \(job.name)"
        case .confirm(let job, _, _): "the upload of \(job.name)"
        case .clearDelete: "a finished delete"
        case .putRename(let rename): "the rename of \(rename.serverName)"
        case .dropRename: "a finished rename"
        case .updateOperation(let operation), .finishOperation(let operation, _): "\(operation.kind.rawValue) \(operation.name)"
        }
    }
}
