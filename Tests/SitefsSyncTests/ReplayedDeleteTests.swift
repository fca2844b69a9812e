import Foundation
import Logging
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Synchronization
import Testing
import SitefsConcurrency

/// A delete made offline and replayed: the engine keeps the item hidden until the core has
/// handled `SyncEvent.removed` (it drops the item from its cache then, which makes stale a
/// listing asked for before the server deleted it and answered after). Unhidden first, such
/// a listing was stored with the file in it: a file deleted here was listed again.
@Suite struct ReplayedDeleteTests {
    /// What the handler saw while `.removed` was being delivered.
    private final class Seen: Sendable {
        let hiddenDuringDelivery = Mutex<[Bool]>([])
        let engine = Mutex<SyncEngine?>(nil)
    }

    @Test func aReplayedDeleteIsStillHiddenWhileTheCoreHearsOfIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-replayed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("staging"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var logger = Logger(label: "sitefs-replayed-test")
        logger.logLevel = .critical
        let backend = InMemoryBackend()
        let clock = MountClock.manual()
        let monitored = MonitoredBackend(backend, monitor: ConnectionMonitor(clock: clock, logger: logger))
        let engine = try SyncEngine(backend: monitored, journalPath: directory.appendingPathComponent("journal.sqlite").path,
                                    parallelism: 1, delays: .uniform(.seconds(3600)), renamesWait: .seconds(2), userName: "tester",
                                    unlinker: BackgroundUnlinker(), clock: .manual(), logger: logger)
        defer { engine.shutdown(waitingUpTo: .seconds(5)) }
        let seen = Seen()
        seen.engine.withLock { $0 = engine }
        engine.start(asking: SyncEngine.MountQueries(folderChain: { _ in nil }, openCopyBase: { _ in nil }),
                     restoring: { _ in }, reporting: { event in
                         guard case .removed(let identifier) = event, let engine = seen.engine.withLock({ $0 }) else { return }
                         seen.hiddenDuringDelivery.withLock { $0.append(engine.state(of: identifier, reading: .namespace).isRemoved) }
                     })
        let site = backend.addSite("Harbour")
        let doc = backend.add("doc.txt", in: site, kind: .file, content: Array("v1".utf8))
        let item = try monitored.item(doc)
        backend.fail(with: .unreachable("test: the network is down"))
        for _ in 0..<2 { _ = try? monitored.sites(after: nil, limit: 1) }
        guard case .queued = try engine.apply(.remove(item)) else {
            Issue.record("delete offline was not queued")
            return
        }

        backend.fail(with: nil)
        clock.advance(by: .seconds(5))  // a probe is due
        _ = try monitored.sites(after: nil, limit: 1)  // the server answers again: the delete is replayed
        #expect(engine.settle(timeout: .seconds(20)))
        #expect(backend.node(named: "doc.txt", in: site) == nil)
        #expect(eventually { seen.hiddenDuringDelivery.withLock { $0 } == [true] }, "reported once, hidden while it was")
        #expect(eventually { !engine.state(of: doc, reading: .namespace).isRemoved }, "and no longer hidden after")
    }
}
