import SitefsAPI
import SitefsProvider

/// Namespace operations made offline (mkdir, delete, rmdir: see `NamespaceOperation`) and
/// not on the server yet. A value guarded by the uploader's `condition`; no I/O.
///
/// What holds:
/// - Operations go in the order made, one at a time: `queued` is in increasing `sequence`,
///   and at most one is `inFlight`, which came before all of `queued`.
/// - `lastSequence` is the highest sequence ever given (the journal's), so a rename queued
///   now goes after every operation made before it.
/// - An operation put back while offline (`putBack`) goes to the head again: it is still
///   the oldest.
struct OperationQueue {
    private(set) var queued: [NamespaceOperation] = []
    private(set) var inFlight: NamespaceOperation?
    private(set) var lastSequence: Int64 = 0

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
        inFlight?.identifier == identifier || queued.contains { $0.identifier == identifier }
    }

    var isIdle: Bool { queued.isEmpty && inFlight == nil }

    var count: Int { queued.count + (inFlight == nil ? 0 : 1) }

    /// Being sent first, then queued in order.
    var all: [NamespaceOperation] { (inFlight.map { [$0] } ?? []) + queued }

    /// True while an operation made at or before `sequence` has not reached the server.
    func isPending(upTo sequence: Int64) -> Bool {
        if let sending = inFlight, sending.sequence <= sequence { return true }
        return queued.first.map { $0.sequence <= sequence } ?? false
    }

    /// The first queued operation when nothing is being sent and it is due at `now`.
    func next(at now: ContinuousClock.Instant) -> NamespaceOperation? {
        guard inFlight == nil, let first = queued.first, first.notBefore <= now else { return nil }
        return first
    }

    /// Moves the first operation (`next`) into flight, as `sending` (its parent possibly
    /// resolved to a server folder).
    mutating func begin(_ sending: NamespaceOperation) {
        queued.removeFirst()
        inFlight = sending
    }

    mutating func end() { inFlight = nil }

    /// The operation in flight goes back to the head of the queue (offline).
    mutating func putBack(_ operation: NamespaceOperation) {
        inFlight = nil
        queued.insert(operation, at: 0)
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
