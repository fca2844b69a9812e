import Foundation
import HummingbirdTesting
import SitefsAPI
import SitefsTestSupport
import Synchronization
import Testing
@testable import SitefsServerCore

/// A clock a test moves by hand.
final class ManualClock: Sendable {
    private let start = ContinuousClock.now
    private let elapsed = Mutex<Duration>(.zero)
    func advance(by duration: Duration) { elapsed.withLock { $0 += duration } }
    var now: ContinuousClock.Instant { start + elapsed.withLock { $0 } }
}

@Suite struct SignInThrottleTests {
    @Test func failuresPastTheFreeOnesWaitLongerEachTimeUpToTheCap() {
        let clock = ManualClock()
        let throttle = SignInThrottle(now: { clock.now })
        for _ in 0..<5 {
            #expect(throttle.wait(user: "anna", address: "10.0.0.1") == nil)
            throttle.failed(user: "anna", address: "10.0.0.1")
        }
        var expected: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30), .seconds(30)]
        while !expected.isEmpty {
            let wait = expected.removeFirst()
            #expect(throttle.wait(user: "anna", address: "10.0.0.1") == wait)
            clock.advance(by: wait)
            #expect(throttle.wait(user: "anna", address: "10.0.0.1") == nil, "still waiting after \(wait)")
            throttle.failed(user: "anna", address: "10.0.0.1")
        }
    }

    @Test func userAndAddressAreCountedApartAndASignInClearsThem() {
        let clock = ManualClock()
        let throttle = SignInThrottle(now: { clock.now })
        // One address guessing many users' passwords.
        for index in 0..<6 { throttle.failed(user: "user\(index)", address: "10.0.0.9") }
        #expect(throttle.wait(user: "someone", address: "10.0.0.9") != nil, "the address is not throttled")
        #expect(throttle.wait(user: "someone", address: "10.0.0.8") == nil, "another address is throttled")
        throttle.succeeded(user: "user0", address: "10.0.0.9")
        #expect(throttle.wait(user: "someone", address: "10.0.0.9") == nil)
    }

    @Test func failuresAreForgottenAfterAQuarterOfAnHour() {
        let clock = ManualClock()
        let throttle = SignInThrottle(now: { clock.now })
        for _ in 0..<5 { throttle.failed(user: "anna", address: nil) }
        clock.advance(by: .seconds(16 * 60))
        throttle.failed(user: "anna", address: nil)
        #expect(throttle.wait(user: "anna", address: nil) == nil, "old failures still counted")
    }

    @Test func recordsStayBounded() {
        var policy = SignInThrottle.Policy()
        policy.maximumRecords = 100
        let clock = ManualClock()
        let throttle = SignInThrottle(policy: policy, now: { clock.now })
        for index in 0..<1000 {
            clock.advance(by: .milliseconds(1))
            throttle.failed(user: "user\(index)", address: nil)
        }
        #expect(throttle.recordCount <= 100)
    }

    @Test func theSixthWrongPasswordInARowGets429WithRetryAfter() async throws {
        let env = try TestEnvironment()
        try await env.user("anna", password: "secret")
        try await env.withRouter { client in
            let api = APIClient(client)
            for _ in 0..<5 {
                try await api.send(.post, "/v1/session", json: SessionRequest(username: "anna", password: "guess")).expect(.unauthorized)
            }
            let throttled = try await api.send(.post, "/v1/session", json: SessionRequest(username: "anna", password: "secret"))
            try throttled.expect(.tooManyRequests)
            #expect(throttled.errorCode == "too_many_attempts")
            #expect(throttled.headers[.retryAfter] == "1")
        }
    }

    @Test func hashingRunsAtMostSlotsAtATimeAndRefusesBeyondTheQueue() async throws {
        let gate = HashingGate(slots: 2, maximumWaiting: 3)
        let peak = Mutex((now: 0, most: 0))
        let release = DispatchSemaphore(value: 0)
        let work: @Sendable () -> Int = {
            peak.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            _ = release.wait(timeout: .now() + 30)
            release.signal()  // passed on: every work item holding a slot ends
            peak.withLock { $0.now -= 1 }
            return 1
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<5 { group.addTask { try await gate.run(work) } }
            // 2 running and 3 waiting: the sixth is refused at once.
            try #require(await eventually(every: .milliseconds(2)) { peak.withLock { $0.now } == 2 })
            // The gate shows no queue length: a moment for the other three to join its queue.
            try await Task.sleep(for: .milliseconds(50))
            await #expect(throws: APIError.self) { try await gate.run(work) }
            release.signal()
            var done = 0
            for try await value in group { done += value }
            #expect(done == 5)
        }
        #expect(peak.withLock { $0.most } == 2)
    }
}
