import Foundation
import Logging
import SitefsProvider
import SitefsStore
import SitefsSync
import SitefsTestSupport
import Synchronization
import Testing
import SitefsConcurrency

/// Offline is what the mount's own requests find, and the mount finds the server back by
/// itself: time is a manual clock, so "a second has passed" is a step of the test.
@Suite struct ConnectionMonitorTests {
    private func monitored() -> (MonitoredBackend, InMemoryBackend, MountClock) {
        let clock = MountClock.manual()
        let server = InMemoryBackend()
        server.addSite("Harbour")
        var logger = Logger(label: "sitefs-connection-test")
        logger.logLevel = .critical
        return (MonitoredBackend(server, monitor: ConnectionMonitor(clock: clock, probeInterval: .seconds(1), logger: logger)),
                server, clock)
    }

    @Test func twoFailuresInTransitMakeTheMountOfflineAndLaterRequestsFailAtOnce() throws {
        let (backend, server, _) = monitored()
        server.fail(with: .unreachable("refused"))
        #expect(throws: ProviderError.self) { _ = try backend.sites(after: nil, limit: 1) }
        #expect(backend.monitor.offlineSince == nil, "one dropped connection is not offline")
        #expect(throws: ProviderError.self) { _ = try backend.sites(after: nil, limit: 1) }
        #expect(backend.monitor.offlineSince != nil)
        let sent = server.calls("sites")
        do {
            _ = try backend.sites(after: nil, limit: 1)
            Issue.record("a request went through while offline")
        } catch {
            guard case .offline = error else { Issue.record("expected .offline, got \(error)"); return }
        }
        #expect(server.calls("sites") == sent, "refused without being sent")
    }

    @Test func oneRequestASecondFindsTheServerBackAndTellsWhoWaits() throws {
        let (backend, server, clock) = monitored()
        let told = Mutex(0)
        backend.monitor.whenReconnected { told.withLock { $0 += 1 } }
        server.fail(with: .unreachable("refused"))
        for _ in 0..<2 { _ = try? backend.sites(after: nil, limit: 1) }
        #expect(backend.monitor.offlineSince != nil)
        server.fail(with: nil)  // the server is back, but nobody has asked yet
        let before = server.calls("sites")
        _ = try? backend.sites(after: nil, limit: 1)
        #expect(server.calls("sites") == before, "within the probe interval nothing is sent")
        clock.advance(by: .seconds(1))
        let reconnections = backend.monitor.reconnections
        _ = try backend.sites(after: nil, limit: 1)  // let through: the server answers
        #expect(backend.monitor.offlineSince == nil)
        #expect(backend.monitor.cameBack(since: reconnections))
        #expect(told.withLock { $0 } == 1)
    }

    @Test func anAnswerOfAnyKindMeansTheServerIsThere() throws {
        let (backend, server, _) = monitored()
        server.fail(with: .unreachable("refused"))
        _ = try? backend.sites(after: nil, limit: 1)
        server.fail(with: .serverUnavailable(status: 503, message: "busy"))
        _ = try? backend.sites(after: nil, limit: 1)
        server.fail(with: .unreachable("refused"))
        _ = try? backend.sites(after: nil, limit: 1)
        #expect(backend.monitor.offlineSince == nil, "a 503 between two failures: not two in a row")
    }
}
