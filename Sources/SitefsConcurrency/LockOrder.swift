import Foundation

/// The mount's lock order, checked at run time in debug builds (the tests): a lock may be
/// taken only while every lock the thread holds ranks below it. A violation is a deadlock
/// waiting for the wrong interleaving; here it stops the test that made it, at the line.
/// (A thread's held ranks live in its thread dictionary: slow, and for debug builds only.)
///
/// The order (see `SitefsFilesystem` for what each guards):
/// 1. `copies`: the registry of local copies;
/// 2. a `LocalCopy`'s `condition` (never two at once);
/// 3. the sync engine's uploader `condition`;
/// 4. the sync engine's namespace;
/// 5. the uploader's published save states (what `stat` reads).
/// Release builds compile the checks out.
package enum LockRank: Int, Sendable, Comparable {
    case copies = 1
    case copy = 2
    case uploader = 3
    case namespace = 4
    case published = 5

    package static func < (lhs: LockRank, rhs: LockRank) -> Bool { lhs.rawValue < rhs.rawValue }
}

package enum LockOrder {
    #if DEBUG
    private static let heldKey = "sitefs.lockOrder.held"
    private static let recordingKey = "sitefs.lockOrder.recording"

    /// The ranks this thread holds, innermost last.
    private static var held: [LockRank] {
        get { (Thread.current.threadDictionary[heldKey] as? [Int])?.compactMap(LockRank.init(rawValue:)) ?? [] }
        set { Thread.current.threadDictionary[heldKey] = newValue.map(\.rawValue) }
    }

    private static func violated(taking rank: LockRank, holding current: [LockRank]) {
        let description = "taking \(rank) while holding [\(current.map { "\($0)" }.joined(separator: ", "))]"
        if var recorded = Thread.current.threadDictionary[recordingKey] as? [String] {
            recorded.append(description)
            Thread.current.threadDictionary[recordingKey] = recorded
            return
        }
        assertionFailure("lock order: \(description)")
    }

    /// Runs `body` with this thread's violations recorded instead of stopping the process,
    /// and returns them (for the test of the check itself).
    package static func violations(during body: () -> Void) -> [String] {
        Thread.current.threadDictionary[recordingKey] = [String]()
        defer { Thread.current.threadDictionary[recordingKey] = nil }
        body()
        return Thread.current.threadDictionary[recordingKey] as? [String] ?? []
    }
    #endif

    /// Call before taking a lock of `rank`.
    @inline(__always)
    package static func taking(_ rank: LockRank) {
        #if DEBUG
        let current = held
        if let highest = current.max(), highest >= rank { violated(taking: rank, holding: current) }
        held = current + [rank]
        #endif
    }

    /// Call after releasing a lock of `rank`.
    @inline(__always)
    package static func released(_ rank: LockRank) {
        #if DEBUG
        var current = held
        if let index = current.lastIndex(of: rank) { current.remove(at: index) }
        held = current
        #endif
    }
}

/// An `NSCondition` whose lock and unlock are checked against the lock order (Foundation's
/// `NSCondition` cannot be subclassed from Swift on Linux, so this wraps one). A wait keeps
/// the rank held: the thread holds the lock again when the wait returns.
package final class OrderedCondition: @unchecked Sendable {
    private let rank: LockRank
    private let condition = NSCondition()

    package init(rank: LockRank) {
        self.rank = rank
    }

    package func lock() {
        LockOrder.taking(rank)
        condition.lock()
    }

    package func unlock() {
        condition.unlock()
        LockOrder.released(rank)
    }

    package func wait() { condition.wait() }

    /// False when `limit` passed first.
    @discardableResult
    package func wait(until limit: Date) -> Bool { condition.wait(until: limit) }

    package func broadcast() { condition.broadcast() }

    package func signal() { condition.signal() }
}

/// A value behind a lock checked against the lock order, for the locks that are not
/// conditions (`copies`, the namespace).
package final class OrderedMutex<Value>: @unchecked Sendable {
    private let rank: LockRank
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value, rank: LockRank) {
        self.value = value
        self.rank = rank
    }

    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        LockOrder.taking(rank)
        lock.lock()
        defer {
            lock.unlock()
            LockOrder.released(rank)
        }
        return try body(&value)
    }
}
