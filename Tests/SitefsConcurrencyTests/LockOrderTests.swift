import Testing
import SitefsConcurrency

#if DEBUG
/// The run-time check of the lock order (debug builds): every other test runs with it on,
/// so a path that takes locks out of order stops the suite; these show it notices.
@Suite struct LockOrderTests {
    @Test func locksTakenInOrderPass() {
        let copies = OrderedMutex(0, rank: .copies)
        let copy = OrderedCondition(rank: .copy)
        let uploader = OrderedCondition(rank: .uploader)
        let violations = LockOrder.violations {
            copies.withLock { _ in
                copy.lock()
                uploader.lock()
                uploader.unlock()
                copy.unlock()
            }
            uploader.lock()  // released locks no longer count
            uploader.unlock()
        }
        #expect(violations.isEmpty)
    }

    @Test func aLockTakenUnderOneRankedAfterItIsReported() {
        let copies = OrderedMutex(0, rank: .copies)
        let copy = OrderedCondition(rank: .copy)
        let uploader = OrderedCondition(rank: .uploader)
        let violations = LockOrder.violations {
            uploader.lock()
            copy.lock()  // an engine lock held while taking a copy's: the order's inverse
            copy.unlock()
            uploader.unlock()
            copy.lock()
            copies.withLock { _ in }  // the registry under a copy's lock
            copy.unlock()
        }
        #expect(violations == ["taking copy while holding [uploader]", "taking copies while holding [copy]"])
    }

    @Test func twoCopiesLocksAtOnceAreReported() {
        let first = OrderedCondition(rank: .copy), second = OrderedCondition(rank: .copy)
        let violations = LockOrder.violations {
            first.lock()
            second.lock()
            second.unlock()
            first.unlock()
        }
        #expect(violations.count == 1)
    }
}
#endif
