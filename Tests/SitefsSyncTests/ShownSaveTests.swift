import Foundation
import Logging
import SitefsProvider
import SitefsStore
@testable import SitefsSync
import SitefsTestSupport
import Synchronization
import Testing
import SitefsConcurrency

/// What `stat` asks of the engine is answered while the engine's queue lock is held (as it
/// is across an outcome's journal commit): a `stat` never waits for an fsync.
@Suite struct ShownSaveTests {
    @Test func aSaveIsShownWhileTheQueueLockIsHeld() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-shown-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("staging"), withIntermediateDirectories: true)
        var logger = Logger(label: "sitefs-shown-test")
        logger.logLevel = .critical
        let backend = InMemoryBackend()
        let engine = try SyncEngine(backend: backend, journalPath: directory.appendingPathComponent("journal.sqlite").path,
                                    parallelism: 1, delays: .uniform(.seconds(3600)), renamesWait: .seconds(2), userName: "tester",
                                    unlinker: BackgroundUnlinker(), clock: .manual(), logger: logger)
        defer { engine.shutdown(waitingUpTo: .seconds(5)) }
        let site = backend.addSite("Harbour")
        let file = backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        let staged = directory.appendingPathComponent("staging/doc").path
        try Data("saved".utf8).write(to: URL(fileURLWithPath: staged))
        try engine.save(SaveJob(identifier: file, name: "doc.odt", parent: site, stagedPath: staged, size: 5,
                                 baseVersion: nil, modified: nil))

        let answer = Mutex<PublishedSave??>(nil)
        engine.uploader.condition.lock()
        let asker = Thread {
            let shown = engine.state(of: file, reading: .shown).shownSave  // asked with no other lock held
            answer.withLock { $0 = .some(shown) }
        }
        asker.start()
        let answered = eventually(timeout: .seconds(5)) { answer.withLock { $0 != nil } }
        engine.uploader.condition.unlock()
        #expect(answered, "stat waited for the engine's queue lock")
        let shown = try #require(answer.withLock { $0 } ?? nil)
        #expect(shown.isPending && shown.latest.size == 5)
    }
}
