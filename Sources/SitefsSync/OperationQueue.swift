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

    init(resuming queued: [NamespaceOperation] = [], lastSequence: Int64 = 0) {
        self.queued = queued
        self.lastSequence = max(lastSequence, queued.last?.sequence ?? 0)
    }

    /// Queues an operation the journal has just numbered.
    mutating func append(_ operation: NamespaceOperation) {
        queued.append(operation)
        lastSequence = max(lastSequence, operation.sequence)
    }

    /// Queued or being sent.
    func isPending(_ identifier: ItemIdentifier) -> Bool {
        inFlight.contains { $0.identifier == identifier } || queued.contains { $0.identifier == identifier }
    }

    /// Being sent now.
    func isBeingSent(_ identifier: ItemIdentifier) -> Bool { inFlight.contains { $0.identifier == identifier } }

    var isIdle: Bool { queued.isEmpty && inFlight.isEmpty }

    var count: Int { queued.count + inFlight.count }

    /// Being sent first, then queued in order.
    var all: [NamespaceOperation] { inFlight + queued }

    /// True while an operation made at or before `sequence` has not reached the server.
    func isPending(upTo sequence: Int64) -> Bool {
        if let first = inFlight.first, first.sequence <= sequence { return true }
        return queued.first.map { $0.sequence <= sequence } ?? false
    }

    /// The first queued operation when it may go at `now`: due, and nothing in flight, or
    /// it and everything in flight deletes of files, fewer than `parallelDeletes`.
    func next(at now: ContinuousClock.Instant) -> NamespaceOperation? {
        guard let first = queued.first, first.notBefore <= now else { return nil }
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
        let index = queued.firstIndex { $0.sequence > operation.sequence } ?? queued.endIndex
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
