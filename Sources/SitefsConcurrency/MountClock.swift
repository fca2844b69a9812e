import Foundation
import Synchronization

/// What time it is for everything in the mount that expires or waits: cached listings and
/// items, the write-back delay, the uploader's retry backoff, how long a create is
/// remembered.
///
/// The system's continuous clock in a mount; in tests a manual one that moves only when told
/// (`advance`), so "the listing is stale now" or "the retry is due" is a step the test
/// takes, not a sleep it hopes is long enough. Waits on a manual clock look again every few
/// milliseconds of real time, so an `advance` ends them without anyone being told.
public final class MountClock: Sendable {
    /// The continuous clock (monotonic, counts suspended time), for every real mount.
    public static let system = MountClock(manual: false)

    private let isManual: Bool
    private let start: ContinuousClock.Instant
    /// How far a manual clock has been moved past its start.
    private let offset = Mutex<Duration>(.zero)

    private init(manual: Bool) {
        start = .now
        isManual = manual
    }

    /// A clock that stands still until `advance` moves it.
    public static func manual() -> MountClock { MountClock(manual: true) }

    public var now: ContinuousClock.Instant {
        guard isManual else { return .now }
        return start + offset.withLock { $0 }
    }

    /// Moves a manual clock on; the system clock cannot be moved.
    public func advance(by duration: Duration) {
        precondition(isManual, "only a manual clock can be advanced")
        precondition(duration >= .zero, "a clock does not go back")
        offset.withLock { $0 += duration }
    }

    /// How often a wait on a manual clock looks at it again.
    private static let manualPollInterval: TimeInterval = 0.005

    /// Waits on `condition` (locked by the caller) until it is signalled or `deadline` has
    /// come on this clock. Returns like `NSCondition.wait(until:)`: the caller checks again.
    package func wait(on condition: some TimedWaiting, until deadline: ContinuousClock.Instant) {
        guard isManual else {
            _ = condition.wait(until: Date().addingTimeInterval(max(0.001, ContinuousClock.now.duration(to: deadline).seconds)))
            return
        }
        if now < deadline { _ = condition.wait(until: Date().addingTimeInterval(Self.manualPollInterval)) }
    }

    /// Sleeps for `duration` on this clock, or until `stop` says to end early (asked as the
    /// sleep goes on, at least every 100 ms of real time).
    public func sleep(for duration: Duration, unless stop: () -> Bool) {
        let deadline = now + duration
        while now < deadline, !stop() {
            let left = isManual ? Self.manualPollInterval : min(now.duration(to: deadline).seconds, 0.1)
            Thread.sleep(forTimeInterval: max(0.001, left))
        }
    }
}

extension Duration {
    /// As fractional seconds, for Foundation's time APIs.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// A condition a `MountClock` can wait on (locked by the caller).
package protocol TimedWaiting: AnyObject {
    /// False when `limit` passed first.
    func wait(until limit: Date) -> Bool
}

extension NSCondition: TimedWaiting {}
extension OrderedCondition: TimedWaiting {}
