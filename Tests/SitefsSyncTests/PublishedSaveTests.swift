import Foundation
import Logging
import SitefsProvider
import SitefsStore
@testable import SitefsSync
import SitefsTestSupport
import Testing
import SitefsConcurrency
import Synchronization

/// What `stat` reads of a save (`Uploader.publishedSave`) stays "pending" until the core has
/// been told the upload's outcome: in between, the core still holds the item's old metadata,
/// and a reader shown that old size reads the new content cut short. It says the save is on
/// the server meanwhile: its snapshot is gone, so a download must not restore from it.
@Suite struct PublishedSaveTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-published-\(UUID().uuidString)")

    @Test func aSaveStaysPendingUntilItsOutcomeIsReported() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("staging"), withIntermediateDirectories: true)
        let backend = InMemoryBackend()
        let site = backend.addSite("Harbour")
        let document = backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        var logger = Logger(label: "sitefs-published-test")
        logger.logLevel = .critical
        // The report sees what `stat` would see while the core is being told.
        let uploaderBox = Mutex<Uploader?>(nil)
        let seenWhileReporting = Mutex<[String]>([])
        let uploader = try Uploader(backend: backend, journalPath: directory.appendingPathComponent("journal.sqlite").path,
                                    parallelism: 1, userName: "tester", unlinker: BackgroundUnlinker(),
                                    logger: logger) { outcome in
            let published = uploaderBox.withLock { $0 }?.publishedSave(of: outcome.job.identifier)
            let seen = published.map { "pending: \($0.isPending), on the server: \($0.isOnServer)" } ?? "no save"
            seenWhileReporting.withLock { $0.append(seen) }
        }
        uploaderBox.withLock { $0 = uploader }
        uploader.start(parallelism: 1)
        defer { uploader.shutdown() }

        let staged = directory.appendingPathComponent("staging/doc").path
        try Data("the new, longer content".utf8).write(to: URL(fileURLWithPath: staged))
        let base = try backend.item(document).version
        try uploader.enqueue(Uploader.Job(identifier: document, name: "doc.odt", parent: site, stagedPath: staged,
                                          size: 23, baseVersion: base, modified: nil))
        #expect(uploader.waitUntilIdle(timeout: .seconds(10)))
        #expect(backend.content(of: document) == Array("the new, longer content".utf8))
        // Pending for `stat`, on the server for a download (its snapshot is gone).
        #expect(seenWhileReporting.withLock { $0 } == ["pending: true, on the server: true"])
        #expect(uploader.publishedSave(of: document) == nil, "still shown as a save once reported")
    }
}
