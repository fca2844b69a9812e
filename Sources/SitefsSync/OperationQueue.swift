import SitefsAPI
import SitefsProvider

/// Namespace operations (mkdir and link made offline, deletes, rmdir, chmod: see
/// `NamespaceOperation`) not on the server yet. A value guarded by the uploader's
/// `condition`; no I/O.
///
/// What holds:
/// - Operations go in the order made: `queued` is in increasing `sequence`, and everything
///   `inFlight` came before all of `queued`.
/// - One at a time, except deletes of files: those that follow each other in the queue go
///   together, up to `parallelDeletes` at once (`rm -r` of a folder of 1,000 files is 1,000
///   of them). None of them depends on another: each names one file, none makes a name or
///   a folder another needs. Anything else waits until nothing is in flight, and nothing
///   goes while it is, so the server sees every other change in the order made.
/// - `inFlight` is in increasing `sequence`.
/// - A delete of a file waits until no other delete has been queued in its folder for
///   `deleteSettle` (`lastDeleteQueued`), so that the rmdir which ends an `rm -r` finds the
///   folder's deletes still queued and takes them along (`absorbDeletes`): one delete of the
///   folder on the server instead of one per file. An rmdir carrying deletes stands for them
///   in every question about order (`firstSequence`) and about what is pending.
/// - `lastSequence` is the highest sequence ever given (the journal's), so a rename queued
///   now goes after every operation made before it.
/// - An operation put back while offline (`putBack`) goes back to its place by sequence,
///   ahead of everything queued after it.
struct OperationQueue {
    private(set) var queued: [NamespaceOperation] = []
    private(set) var inFlight: [NamespaceOperation] = []
    private(set) var lastSequence: Int64 = 0
    /// How many deletes of files may be on their way at once.
    var parallelDeletes = 1
    /// How long a delete of a file waits after the last delete queued in its folder.
    var deleteSettle: Duration = .zero
    /// When a delete was last queued in each folder (entries older than `deleteSettle` go).
    private var lastDeleteQueued: [ItemIdentifier: ContinuousClock.Instant] = [:]

    init(resuming queued: [NamespaceOperation] = [], lastSequence: Int64 = 0) {
        self.queued = queued
        self.lastSequence = max(lastSequence, queued.last?.sequence ?? 0)
    }

    /// Queues an operation the journal has just numbered, at `now`.
    mutating func append(_ operation: NamespaceOperation, at now: ContinuousClock.Instant) {
        queued.append(operation)
        lastSequence = max(lastSequence, operation.sequence)
        if operation.kind == .deleteFile, let folder = operation.parent {
            lastDeleteQueued = lastDeleteQueued.filter { now - $0.value < deleteSettle }
            lastDeleteQueued[folder] = now
        }
    }

    /// Takes the queued deletes of files in the folder `rmdir` removes into it (see
    /// `NamespaceOperation.absorbed`); returns how many.
    mutating func absorbDeletes(into rmdir: inout NamespaceOperation) -> Int {
        let folder = rmdir.identifier
        var taken: [NamespaceOperation] = []
        queued.removeAll { operation in  // in order, once each
            guard operation.kind == .deleteFile, operation.parent == folder else { return false }
            taken.append(operation)
            return true
        }
        guard !taken.isEmpty else { return 0 }
        rmdir.absorbed = taken
        lastDeleteQueued[folder] = nil
        return taken.count
    }

    /// An rmdir in flight goes back without the deletes it carried: each to its place by
    /// sequence, ahead of the rmdir, due at once (the server's folder held something else).
    mutating func returnAbsorbed(of rmdir: NamespaceOperation) {
        end(rmdir)
        var alone = rmdir
        alone.absorbed = []
        for operation in rmdir.absorbed + [alone] { insertInOrder(operation) }
    }

    /// Queued or being sent (carried by an rmdir too).
    func isPending(_ identifier: ItemIdentifier) -> Bool {
        let names = { (operation: NamespaceOperation) in
            operation.identifier == identifier || operation.absorbed.contains { $0.identifier == identifier }
        }
        return inFlight.contains(where: names) || queued.contains(where: names)
    }

    /// Being sent now.
    func isBeingSent(_ identifier: ItemIdentifier) -> Bool {
        inFlight.contains { $0.identifier == identifier || $0.absorbed.contains { $0.identifier == identifier } }
    }

    var isIdle: Bool { queued.isEmpty && inFlight.isEmpty }

    var count: Int {
        let carried = { (total: Int, operation: NamespaceOperation) in total + 1 + operation.absorbed.count }
        return inFlight.reduce(0, carried) + queued.reduce(0, carried)
    }

    /// Being sent first, then queued in order; the deletes an rmdir carries before it.
    var all: [NamespaceOperation] { (inFlight + queued).flatMap { $0.absorbed + [$0] } }

    /// True while an operation made at or before `sequence` has not reached the server.
    func isPending(upTo sequence: Int64) -> Bool {
        inFlight.contains { $0.firstSequence <= sequence } || queued.contains { $0.firstSequence <= sequence }
    }

    /// When the first queued operation may go: a delete of a file also once its folder's
    /// deletes have settled.
    var firstDue: ContinuousClock.Instant? {
        guard let first = queued.first else { return nil }
        guard first.kind == .deleteFile, let folder = first.parent, let last = lastDeleteQueued[folder] else {
            return first.notBefore
        }
        return max(first.notBefore, last + deleteSettle)
    }

    /// Deletes of files no longer wait for their folders' deletes to settle (`sitefs sync`).
    mutating func expediteDeletes() { lastDeleteQueued = [:] }

    /// The first queued operation when it may go at `now`: due, and nothing in flight, or
    /// it and everything in flight deletes of files, fewer than `parallelDeletes`.
    func next(at now: ContinuousClock.Instant) -> NamespaceOperation? {
        guard let first = queued.first, let due = firstDue, due <= now else { return nil }
        if inFlight.isEmpty { return first }
        guard first.kind == .deleteFile, inFlight.count < parallelDeletes,
              inFlight.allSatisfy({ $0.kind == .deleteFile }) else { return nil }
        return first
    }

    /// Moves the first operation (`next`) into flight, as `sending` (its parent possibly
    /// resolved to a server folder).
    mutating func begin(_ sending: NamespaceOperation) {
        queued.removeFirst()
        inFlight.append(sending)
    }

    /// `operation` is no longer being sent.
    mutating func end(_ operation: NamespaceOperation) {
        inFlight.removeAll { $0.sequence == operation.sequence }
    }

    /// An operation in flight goes back to its place in the queue (offline).
    mutating func putBack(_ operation: NamespaceOperation) {
        end(operation)
        insertInOrder(operation)
    }

    private mutating func insertInOrder(_ operation: NamespaceOperation) {
        let index = queued.firstIndex { $0.firstSequence > operation.firstSequence } ?? queued.endIndex
        queued.insert(operation, at: index)
    }

    /// The queued mkdir of the folder made here as `folder`, if it has not been sent.
    func queuedMakeFolder(_ folder: ItemIdentifier) -> Int? {
        queued.firstIndex { $0.kind.makesItem && $0.identifier == folder }
    }

    /// Whether a chmod of `identifier` is queued or being sent.
    func hasMode(for identifier: ItemIdentifier) -> Bool {
        all.contains { $0.kind == .setMode && $0.identifier == identifier }
    }

    mutating func remove(at index: Int) -> NamespaceOperation { queued.remove(at: index) }

    /// Changes a queued operation in place and returns it.
    mutating func update(at index: Int, _ change: (inout NamespaceOperation) -> Void) -> NamespaceOperation {
        change(&queued[index])
        return queued[index]
    }

    /// Operations waiting after a postponement are due at `now`, their backoff reset.
    mutating func makeDue(at now: ContinuousClock.Instant) {
        for index in queued.indices where queued[index].notBefore > now {
            queued[index].notBefore = now
            queued[index].postponements = 0
        }
    }

    /// Queued operations in the folder `local` now go into `folder`; returns the changed ones.
    mutating func retarget(from local: ItemIdentifier, to folder: ItemIdentifier) -> [NamespaceOperation] {
        var changed: [NamespaceOperation] = []
        for index in queued.indices where queued[index].parent == local
            || (queued[index].kind == .setMode && queued[index].identifier == local) {
            if queued[index].parent == local { queued[index].parent = folder }
            if queued[index].identifier == local { queued[index].identifier = folder }  // a chmod of what was made
            changed.append(queued[index])
        }
        return changed
    }
}

extension NamespaceOperation {
    /// Its place in the order: an rmdir carrying deletes stands where the first of them was made.
    var firstSequence: Int64 { absorbed.first?.sequence ?? sequence }
}
