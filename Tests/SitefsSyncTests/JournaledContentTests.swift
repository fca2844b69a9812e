import Foundation
import GRDB
import Logging
import SitefsConcurrency
import SitefsProvider
import SitefsStore
@testable import SitefsSync
import SitefsTestSupport
import Testing

/// A small save's bytes kept in its journal row (`SaveJob.content`): its snapshot file is
/// not fsynced, so a power cut may empty or lose it; the next start writes it again from
/// the row, and what reaches the server is what close() was told is safe. Its confirmation
/// is not flushed either: a power cut that loses it loses nothing.
@Suite(.serialized)
final class JournaledContentTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-journaled-\(UUID().uuidString)")
    private let clock = MountClock.manual()
    private let backend = InMemoryBackend()

    init() throws {
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private var staging: URL { directory.appendingPathComponent("staging") }
    private var journalPath: String { directory.appendingPathComponent("journal.sqlite").path }

    private func uploader() throws -> Uploader {
        var logger = Logger(label: "sitefs-journaled-content-test")
        logger.logLevel = .critical
        return try Uploader(backend: backend, journalPath: journalPath, parallelism: 1, delays: .uniform(.seconds(1)),
                            userName: "tester", unlinker: BackgroundUnlinker(), clock: clock, logger: logger) { _ in }
    }

    /// A snapshot of `text` in staging with the bytes in the job, as the core saves a small file.
    private func save(_ text: String, of file: ItemIdentifier, in parent: ItemIdentifier?, basedOn version: String?,
                      name: String) throws -> SaveJob {
        let path = staging.appendingPathComponent(UUID().uuidString).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return SaveJob(identifier: file, name: name, parent: parent, stagedPath: path, size: Int64(text.utf8.count),
                       baseVersion: version, modified: nil, content: Array(text.utf8))
    }

    private func startedUploader() throws -> Uploader {
        let uploader = try uploader()
        uploader.start(parallelism: 1)
        return uploader
    }

    /// A server file's small save and a small new file's, not queued yet.
    private func editedAndCreated() throws -> (site: ItemIdentifier, plan: ItemIdentifier, edited: SaveJob, created: SaveJob) {
        let site = backend.addSite("Harbour")
        let plan = backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let edited = try save("second draft", of: plan, in: site, basedOn: try backend.item(plan).version, name: "plan.txt")
        let created = try save("a new note", of: .local(in: site.site), in: site, basedOn: nil, name: "note.txt")
        return (site, plan, edited, created)
    }

    @Test func snapshotsAPowerCutEmptiedOrLostAreWrittenAgainAndUploaded() throws {
        let (site, plan, edited, created) = try editedAndCreated()
        do {
            let first = try startedUploader()
            try first.enqueue(edited)
            try first.enqueue(created)
            // Down before the settle delay passed: nothing was sent.
            #expect(first.shutdown(waitingUpTo: .seconds(5)))
        }
        #expect(backend.content(of: plan) == Array("v1".utf8))
        // The power cut: one snapshot's bytes never reached the disk, the other's name neither.
        #expect(truncate(edited.stagedPath, 0) == 0)
        try FileManager.default.removeItem(atPath: created.stagedPath)

        let second = try startedUploader()
        defer { second.shutdown(waitingUpTo: .seconds(5)) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: edited.stagedPath)) == Data("second draft".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: created.stagedPath)) == Data("a new note".utf8))
        #expect(second.waitUntilIdle(timeout: .seconds(10)))
        #expect(backend.content(of: plan) == Array("second draft".utf8))
        let note = try #require(backend.node(named: "note.txt", in: site))
        #expect(backend.content(of: note.identifier) == Array("a new note".utf8))
    }

    /// A snapshot that cannot be written again (here a folder stands at its path): the
    /// uploader, and so the mount, does not start, says why, and the row keeps the bytes.
    @Test func aSnapshotThatCannotBeWrittenAgainStopsTheStartAndKeepsItsRow() throws {
        let (_, _, edited, _) = try editedAndCreated()
        do {
            let first = try uploader()  // never started: the save stays in the journal
            try first.enqueue(edited)
            first.shutdown()
        }
        try FileManager.default.removeItem(atPath: edited.stagedPath)
        try FileManager.default.createDirectory(atPath: edited.stagedPath, withIntermediateDirectories: false)
        #expect { _ = try self.uploader() } throws: { error in
            "\(error)".contains("the save of plan.txt cannot be written again")
        }
        try FileManager.default.removeItem(atPath: edited.stagedPath)
        let reopened = try uploader()
        defer { reopened.shutdown() }
        #expect(reopened.latestSave(of: edited.identifier)?.stagedPath == edited.stagedPath)
        #expect(try Data(contentsOf: URL(fileURLWithPath: edited.stagedPath)) == Data("second draft".utf8))
    }

    @Test func aSnapshotStillWholeIsLeftAsItIs() throws {
        let path = staging.appendingPathComponent("whole").path
        try Data("kept".utf8).write(to: URL(fileURLWithPath: path))
        let before = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
        Thread.sleep(forTimeInterval: 0.02)
        try ContentDirectory.restoreSnapshot(at: path, content: Array("kept".utf8))
        let after = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
        #expect(before == after, "a whole snapshot was written again")
        // One longer than its content is cut back to it.
        try Data("kept and more".utf8).write(to: URL(fileURLWithPath: path))
        try ContentDirectory.restoreSnapshot(at: path, content: Array("kept".utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("kept".utf8))
    }

    /// What a save produced is kept so that a save based on the same version is rebased onto
    /// it; a new file's create leaves nothing under its local identifier (retired at once,
    /// never a save's base), and a journal that kept such rows loses them at its next open.
    @Test func aNewFilesCreateLeavesNoVersionUnderItsLocalIdentifier() throws {
        let site = ItemIdentifier.site("Harbour")
        let server = ItemIdentifier(site: "Harbour", id: "17")
        let created = try save("new", of: .local(in: "Harbour"), in: site, basedOn: nil, name: "new.txt")
        let edited = try save("edit", of: server, in: site, basedOn: "v1", name: "plan.txt")
        do {
            let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
            try journal.record(created)
            try journal.record(edited)
            try journal.confirmed(created, producing: "v9")
            try journal.confirmed(edited, producing: "v2")
            let versions = try journal.uploadedVersions()
            #expect(versions.keys.sorted { $0.id < $1.id } == [server])
            #expect(versions[server]?.base == "v1" && versions[server]?.result == "v2")
        }
        // A journal of an earlier version, with a row of a local identifier.
        let queue = try DatabaseQueue(path: journalPath)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO uploaded VALUES (?, ?, NULL, 'v9')", arguments: [created.identifier.site, created.identifier.id])
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier LIKE 'v9%'")
        }
        try queue.close()
        let reopened = try UploadJournal(path: journalPath, backendDurable: { _ in })
        #expect(try reopened.uploadedVersions().keys.map(\.self) == [server])
    }

    @Test func aSaveRecordedAgainForTheSameSnapshotKeepsItsBytes() throws {
        let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
        let site = ItemIdentifier.site("Harbour")
        var job = try save("claimed", of: .local(in: "Harbour"), in: site, basedOn: nil, name: "tmp.txt")
        try journal.record(job)
        // What an editor's rename over a server file does: the queued job (without its bytes)
        // is recorded again as a save of that file.
        job.identifier = ItemIdentifier(site: "Harbour", id: "original")
        job.baseVersion = "v3"
        job.content = nil
        try journal.record(job)
        let rows = try journal.unfinished()
        #expect(rows.count == 1)
        #expect(rows.first?.0.identifier.id == "original")
        #expect(rows.first?.0.content == Array("claimed".utf8))
    }

    @Test func theQueueHoldsNoContent() throws {
        let site = backend.addSite("Harbour")
        let uploader = try uploader()
        let job = try save("queued", of: .local(in: site.site), in: site, basedOn: nil, name: "q.txt")
        try uploader.enqueue(job)
        #expect(uploader.latestSave(of: job.identifier)?.content == nil)
        #expect(uploader.shutdown(waitingUpTo: .seconds(5)))
    }

    // A confirmation of a save whose bytes are in its row is committed without waiting for
    // the disk: losing it in a power cut must lose nothing and make no conflict copy.

    /// The journal's files as they are now, or back as they were (`restore`).
    private func copyJournal(restore: Bool) throws {
        for suffix in ["", "-wal", "-shm"] {
            let (from, to) = (journalPath + suffix, journalPath + suffix + ".kept")
            let (source, target) = restore ? (to, from) : (from, to)
            try? FileManager.default.removeItem(atPath: target)
            if FileManager.default.fileExists(atPath: source) { try FileManager.default.copyItem(atPath: source, toPath: target) }
        }
    }

    @Test func theConnectionCommitsDurablyAgainAfterAConfirmation() throws {
        let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
        var job = try save("small", of: ItemIdentifier(site: "Harbour", id: "plan"), in: .site("Harbour"), basedOn: "v1",
                           name: "plan.txt")
        try journal.record(job)
        job.contentInJournal = true
        try journal.confirmed(job, producing: "v2")
        #expect(try journal.synchronousSetting() == 2)
        #expect(try journal.unfinished().isEmpty)
        #expect(try journal.uploadedVersions()[job.identifier]?.result == "v2")
    }

    @Test func aConfirmationLostToAPowerCutIsSentAgainAsTheSameUpload() throws {
        let (site, plan, edited, created) = try editedAndCreated()
        do {
            let first = try startedUploader()
            try first.enqueue(edited)
            try first.enqueue(created)
            // The disk as the power cut will leave it: both saves recorded, nothing confirmed.
            try copyJournal(restore: false)
            clock.advance(by: .seconds(1))
            #expect(first.waitUntilIdle(timeout: .seconds(10)))
            #expect(first.shutdown(waitingUpTo: .seconds(5)))
        }
        #expect(backend.content(of: plan) == Array("second draft".utf8))
        let versionAfter = try backend.item(plan).version
        // The power cut took both confirmations and the snapshots' names.
        try copyJournal(restore: true)
        try? FileManager.default.removeItem(atPath: edited.stagedPath)
        try? FileManager.default.removeItem(atPath: created.stagedPath)
        let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
        #expect(try journal.unfinished().count == 2)

        let second = try startedUploader()
        defer { second.shutdown(waitingUpTo: .seconds(5)) }
        #expect(second.waitUntilIdle(timeout: .seconds(10)))
        #expect(try backend.item(plan).version == versionAfter, "the same bytes were uploaded again as a new version")
        #expect(backend.nodes(in: site).map(\.name).sorted() == ["note.txt", "plan.txt"], "a conflict copy was made")
        #expect(try journal.unfinished().isEmpty)
    }
}
