import SitefsProvider

/// Work that waits in a queue until a time (a save's or a rename's settle delay).
protocol ScheduledWork {
    var notBefore: ContinuousClock.Instant { get set }
}

extension SaveJob: ScheduledWork {}
extension Uploader.RenameJob: ScheduledWork {}

extension Dictionary where Key == ItemIdentifier, Value: ScheduledWork {
    /// Everything (for `identifier`, or every item) is due at `now`.
    mutating func makeDue(at now: ContinuousClock.Instant, only identifier: ItemIdentifier? = nil) {
        if let identifier {
            self[identifier]?.notBefore = now
        } else {
            for key in keys { self[key]!.notBefore = now }
        }
    }

    /// When the first piece of work not due at `now` will be. Runs on every worker wakeup
    /// over every queued job, so it reads the one field by index instead of mapping the
    /// values (large structs) into an array.
    func earliestDue(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var due: ContinuousClock.Instant?
        for index in values.indices {
            let time = values[index].notBefore
            if time > now, due.map({ time < $0 }) ?? true { due = time }
        }
        return due
    }
}
