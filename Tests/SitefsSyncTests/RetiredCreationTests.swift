import Foundation
import Logging
import SitefsProvider
import SitefsStore
@testable import SitefsSync
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// The uploader remembers what each new file's create made (for callers racing its report)
/// for a while, not for the life of the mount.
@Suite struct RetiredCreationTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-retired-\(UUID().uuidString)")

    /// Runs `body` with an uploader over a fresh backend with one site, and cleans up after.
    /// The uploader runs on a manual clock: records age only when a test advances it.
    private let clock = MountClock.manual()

    private func withUploader(keeping kept: Duration,
                              _ body: (Uploader, InMemoryBackend, ItemIdentifier) throws -> Void) throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("staging"), withIntermediateDirectories: true)
        let backend = InMemoryBackend()
        var logger = Logger(label: "sitefs-retired-test")
        logger.logLevel = .critical
        let uploader = try Uploader(backend: backend, journalPath: directory.appendingPathComponent("journal.sqlite").path,
                                    parallelism: 1, userName: "tester", unlinker: BackgroundUnlinker(), retiredCreationsKept: kept,
                                    clock: clock, logger: logger) { _ in }
        uploader.start(parallelism: 1)
        defer { uploader.shutdown() }
        try body(uploader, backend, backend.addSite("Harbour"))
    }

    /// Saves a new file and waits for its create to finish; returns its local identifier.
    private func create(_ name: String, in folder: ItemIdentifier, with uploader: Uploader) throws -> ItemIdentifier {
        let identifier = ItemIdentifier.local(in: folder.site)
        let staged = directory.appendingPathComponent("staging/\(name)").path
        try Data(name.utf8).write(to: URL(fileURLWithPath: staged))
        try uploader.enqueue(Uploader.Job(identifier: identifier, name: name, parent: folder, stagedPath: staged,
                                          size: Int64(name.utf8.count), baseVersion: nil, modified: nil))
        #expect(uploader.waitUntilIdle(timeout: .seconds(10)))
        return identifier
    }

    @Test func aCreateIsForgottenOnceItsRecordIsOlderThanTheTimeKept() throws {
        try withUploader(keeping: .milliseconds(200)) { uploader, backend, site in
            let first = try create("a.txt", in: site, with: uploader)
            #expect(uploader.isRetiredCreation(first))
            clock.advance(by: .milliseconds(201))
            let second = try create("b.txt", in: site, with: uploader)
            #expect(!uploader.isRetiredCreation(first), "a record older than the time kept is still there")
            #expect(uploader.isRetiredCreation(second))
            #expect(backend.node(named: "a.txt", in: site).flatMap { backend.content(of: $0.identifier) } == Array("a.txt".utf8))
        }
    }

    @Test func createsWithinTheTimeKeptAreAllRemembered() throws {
        try withUploader(keeping: .seconds(600)) { uploader, _, site in
            let created = try (0..<5).map { try create("f\($0).txt", in: site, with: uploader) }
            #expect(created.allSatisfy { uploader.isRetiredCreation($0) })
        }
    }
}
