import SitefsCore
import SitefsStore
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// The change feed's wait between rounds runs on the mount's clock, so a test moves it on
/// instead of waiting out the interval.
@Suite struct ChangeFeedClockTests {
    @Test func theNextRoundComesWhenTheClockHasMovedOnByTheInterval() throws {
        let clock = MountClock.manual()
        // An hour: on the real clock the second round would never come within the test.
        let harness = try CoreHarness(clock: clock, changePollInterval: .seconds(3600))
        defer { harness.remove() }
        _ = harness.backend.addSite("Harbour")
        harness.mount()
        defer { harness.filesystem.unmounting() }
        #expect(eventually { harness.backend.calls("changes") == 1 })  // the first round starts at once
        // The poller may still be finishing its first round (its wait not begun) when the
        // clock moves; a wait begun after it counts the hour from then. So the test moves the
        // clock an hour at a time until the next round comes, which real time never brings.
        #expect(eventually(every: .milliseconds(100)) {
            clock.advance(by: .seconds(3600))
            return harness.backend.calls("changes") >= 2
        })
    }
}
