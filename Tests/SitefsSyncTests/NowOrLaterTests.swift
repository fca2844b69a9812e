import Foundation
import Logging
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// The engine decides whether a namespace change goes to the server now or is queued (the
/// rule at `SyncEngine`): the core asks it once, whatever the connection.
@Suite struct NowOrLaterTests {
    private struct Rig {
        let backend = InMemoryBackend()
        let monitored: MonitoredBackend
        let engine: SyncEngine
        let directory: URL

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-now-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("staging"), withIntermediateDirectories: true)
            var logger = Logger(label: "sitefs-now-test")
            logger.logLevel = .critical
            monitored = MonitoredBackend(backend, monitor: ConnectionMonitor(clock: .manual(), logger: logger))
            engine = try SyncEngine(backend: monitored, journalPath: directory.appendingPathComponent("journal.sqlite").path,
                                    parallelism: 1, delays: .uniform(.seconds(3600)), renamesWait: .seconds(2), userName: "tester",
                                    unlinker: BackgroundUnlinker(), clock: .manual(), logger: logger)
            engine.start(asking: SyncEngine.MountQueries(folderChain: { _ in nil }, openCopyBase: { _ in nil }),
                         restoring: { _ in }, reporting: { _ in })
        }

        /// Two failures in transit in a row: the monitor knows the server to be unreachable.
        func goOffline() {
            backend.fail(with: .unreachable("test: the network is down"))
            for _ in 0..<2 { _ = try? monitored.sites(after: nil, limit: 1) }
        }

        func remove() {
            engine.shutdown(waitingUpTo: .seconds(5))
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func onlineAFolderIsMadeOnTheServerAtOnce() throws {
        let rig = try Rig()
        defer { rig.remove() }
        let site = rig.backend.addSite("Harbour")
        guard case .sent(let folder?) = try rig.engine.apply(.makeFolder(named: "Reports", in: site)) else {
            Issue.record("mkdir online was not sent at once")
            return
        }
        #expect(!folder.identifier.isLocal && folder.name == "Reports")
        #expect(rig.backend.calls("createFolder") == 1)
    }

    @Test func offlineChangesAreQueuedAndShownWithoutAskingTheServer() throws {
        let rig = try Rig()
        defer { rig.remove() }
        let site = rig.backend.addSite("Harbour")
        let plans = rig.backend.add("Plans", in: site, kind: .folder)
        let doc = rig.backend.add("doc.txt", in: site, kind: .file, content: Array("v1".utf8))
        let docItem = try rig.monitored.item(doc)
        let plansItem = try rig.monitored.item(plans)
        rig.goOffline()

        guard case .queued(let folder?, _) = try rig.engine.apply(.makeFolder(named: "Reports", in: site)) else {
            Issue.record("mkdir offline was not queued")
            return
        }
        #expect(folder.identifier.isLocal)
        #expect(rig.engine.state(of: folder.identifier, reading: .namespace).created?.name == "Reports")

        guard case .queued(nil, _) = try rig.engine.apply(.remove(docItem)) else {
            Issue.record("delete offline was not queued")
            return
        }
        #expect(rig.engine.state(of: doc, reading: .namespace).isRemoved)

        guard case .queued(let moved?, _) = try rig.engine.apply(.rename(plansItem, to: site, named: "Drawings", replacing: nil)) else {
            Issue.record("folder rename offline was not queued")
            return
        }
        #expect(moved.name == "Drawings")
        #expect(rig.backend.calls("createFolder") == 0 && rig.backend.calls("delete") == 0 && rig.backend.calls("update") == 0)
    }

    @Test func aChangeLostInTransitIsQueued() throws {
        let rig = try Rig()
        defer { rig.remove() }
        let site = rig.backend.addSite("Harbour")
        rig.backend.fail("createFolder", with: .unreachable("test: the answer was lost"))
        guard case .queued(let folder?, _) = try rig.engine.apply(.makeFolder(named: "Reports", in: site)) else {
            Issue.record("mkdir lost in transit was not queued")
            return
        }
        #expect(folder.identifier.isLocal)
        #expect(rig.engine.status.pending == 1)
    }
}
