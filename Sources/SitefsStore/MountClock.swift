import Synchronization

/// What time it is for what expires in the mount (cached listings and items).
///
/// The system's continuous clock in a mount; in tests a manual one that moves only when told
/// (`advance`), so "the listing is stale now" is a step the test takes, not a sleep it hopes
/// is long enough.
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
}
