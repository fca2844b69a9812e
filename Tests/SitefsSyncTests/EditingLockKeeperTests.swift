import Foundation
import Logging
import SitefsAPI
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Synchronization
import Testing

/// The locks a mount holds (`EditingLockKeeper`) over an in-memory server: taken, kept while
/// a reason is left, refreshed, released in order after the document's save, and none where
/// the server cannot lock.
@Suite struct EditingLockKeeperTests {
    /// What the keeper asked of the engine before a release.
    private final class SettleLog: Sendable {
        /// Asked about, in order.
        let documents = Mutex<[ItemIdentifier]>([])
        /// What `mayRelease` answers: whether the document's save has reached the server.
        let saveDone = Mutex(true)
    }

    private struct World {
        let backend: InMemoryBackend
        let document: ProviderItem
        let keeper: EditingLockKeeper
        let settled: SettleLog
    }

    private func world(timeout: Duration = .seconds(300)) throws -> World {
        let backend = InMemoryBackend()
        let site = backend.addSite("Harbour")
        let file = backend.add("report.odt", in: site, kind: .file, content: Array("report".utf8))
        var logger = Logger(label: "keeper-test")
        logger.logLevel = .critical
        let settled = SettleLog()
        let keeper = EditingLockKeeper(backend: backend, holderName: "Anna Berger", device: "desk-a", timeout: timeout,
                                       logger: logger, mayRelease: { document in
                                           settled.documents.withLock { $0.append(document) }
                                           return settled.saveDone.withLock { $0 }
                                       })
        return World(backend: backend, document: try backend.item(file), keeper: keeper, settled: settled)
    }

    @Test func aLockIsKeptWhileAnyReasonIsLeftAndReleasedAfterTheSaveIsSettled() throws {
        let world = try world()
        defer { world.keeper.stop() }
        let outcome = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
        guard case .taken(let lock) = outcome else { Issue.record("not taken: \(outcome)"); return }
        #expect(lock.holderName == "Anna Berger" && lock.device == "desk-a" && lock.application == "LibreOffice")
        world.keeper.acquireInBackground(world.document, for: .writer, application: "cp")
        #expect(world.keeper.held.map(\.name) == ["report.odt"])

        world.keeper.release(world.document.identifier, for: .lockFile)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(world.backend.lockOf(world.document.identifier)?.heldHere == true, "a writer still has it")
        world.settled.saveDone.withLock { $0 = false }  // the writer's save is still queued
        world.keeper.release(world.document.identifier, for: .writer)
        #expect(eventually { world.settled.documents.withLock { $0.count } >= 2 }, "asked again while the save waits")
        #expect(world.backend.lockOf(world.document.identifier)?.heldHere == true, "kept until the save is on the server")
        world.settled.saveDone.withLock { $0 = true }
        #expect(eventually { world.backend.lockOf(world.document.identifier) == nil })
        #expect(world.backend.calls("lock") == 1, "a second reason takes no second lock")
        #expect(world.keeper.held.isEmpty)
    }

    @Test func aReleaseThatArrivesWhileTheLockIsOnItsWayReleasesItOnceTaken() throws {
        let world = try world()
        defer { world.keeper.stop() }
        let keeper = world.keeper, identifier = world.document.identifier
        // LibreOffice gave up on the document while the server was taking the lock.
        world.backend.beforeNextAnswer(of: "lock") { keeper.release(identifier, for: .writer) }
        world.keeper.acquireInBackground(world.document, for: .writer, application: "cp")
        #expect(eventually { world.backend.calls("unlock") == 1 })
        #expect(world.backend.lockOf(identifier) == nil)
        #expect(world.keeper.held.isEmpty)
    }

    @Test func aSaveWaitsForATakeOnItsWayEvenWhenTheWriterClosedMeanwhile() throws {
        let world = try world()
        defer { world.keeper.stop() }
        let keeper = world.keeper, identifier = world.document.identifier
        let waited = Mutex<Bool?>(nil)
        // The writer closes, and its save is about to go, while the server takes the lock:
        // the save waits for the take to end (its token goes along), however it ends.
        let taking = DispatchSemaphore(value: 0), answer = DispatchSemaphore(value: 0)
        world.backend.beforeNextAnswer(of: "lock") {
            taking.signal()
            _ = answer.wait(timeout: .now() + 10)
        }
        keeper.acquireInBackground(world.document, for: .writer, application: "sh")
        #expect(taking.wait(timeout: .now() + 10) == .success)
        world.settled.saveDone.withLock { $0 = false }  // the lock stays until the save is on the server
        keeper.release(identifier, for: .writer)
        let saver = Thread {
            keeper.waitWhileTaking(identifier, upTo: .seconds(20))
            waited.withLock { $0 = world.backend.lockOf(identifier)?.heldHere == true }
        }
        saver.start()
        #expect(!eventually(timeout: .milliseconds(200)) { saver.isFinished }, "the save went while the lock was on its way")
        answer.signal()
        #expect(eventually { saver.isFinished })
        #expect(waited.withLock { $0 } == true, "the save went before the lock was held")
        keeper.waitWhileTaking(ItemIdentifier(site: "elsewhere", id: "1"), upTo: .seconds(20))  // nothing taken: at once
    }

    @Test func someoneElsesLockIsReportedWithTheHolderAndNothingIsKept() throws {
        let world = try world()
        defer { world.keeper.stop() }
        world.backend.lockOnServer(world.document.identifier, by: "Bob Builder")
        let outcome = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
        guard case .heldElsewhere(let holder?) = outcome else { Issue.record("not refused: \(outcome)"); return }
        #expect(holder.holderName == "Bob Builder")
        #expect(world.keeper.held.isEmpty)
        world.keeper.release(world.document.identifier, for: .lockFile)  // LibreOffice made no lock file: nothing to do
        #expect(world.backend.calls("unlock") == 0)
    }

    /// Its first refusal tells (the server is asked whether it locks at all only then: one
    /// out of reach says nothing definite); nothing is sent for locks after that.
    @Test func aServerThatDoesNotLockIsAskedOnceAndNeverLocked() throws {
        let world = try world()
        defer { world.keeper.stop() }
        world.backend.setLocking(false)
        for _ in 0..<3 {
            let outcome = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
            guard case .notTaken = outcome else { Issue.record("taken: \(outcome)"); return }
        }
        #expect(world.backend.calls("lock") == 1)
    }

    @Test func aServerOutOfReachIsNotTakenForOneThatDoesNotLock() throws {
        let world = try world()
        defer { world.keeper.stop() }
        world.backend.fail("lock", with: .unreachable("test: the network is down"))
        let offline = world.keeper.acquire(world.document, for: .writer, application: "cp", wait: .seconds(10))
        guard case .notTaken = offline else { Issue.record("taken: \(offline)"); return }
        world.keeper.release(world.document.identifier, for: .writer)
        world.backend.fail("lock", with: nil)
        let online = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
        guard case .taken = online else { Issue.record("not taken once back: \(online)"); return }
    }

    @Test func aHeldLockIsRefreshedBeforeItsTimeoutAndReleasedAtStop() throws {
        let world = try world(timeout: .seconds(3))
        let outcome = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
        guard case .taken = outcome else { Issue.record("not taken: \(outcome)"); return }
        // Refreshed every third of the timeout: twice within about 2 s.
        #expect(eventually(timeout: .seconds(10)) { world.backend.calls("lock") >= 3 })
        world.keeper.stop()
        #expect(world.backend.lockOf(world.document.identifier) == nil, "released at unmount")
    }

    @Test func aLockLostOnRefreshIsNoLongerHeld() throws {
        let world = try world(timeout: .seconds(3))
        defer { world.keeper.stop() }
        _ = world.keeper.acquire(world.document, for: .lockFile, application: "LibreOffice", wait: .seconds(10))
        #expect(world.keeper.held.count == 1)
        // The server broke it (an administrator) and gave it to someone else.
        world.backend.state.withLock { $0.nodes[world.document.identifier]?.item.lock = nil }
        world.backend.lockOnServer(world.document.identifier, by: "Bob Builder")
        #expect(eventually(timeout: .seconds(10)) { world.keeper.held.isEmpty })
    }
}
