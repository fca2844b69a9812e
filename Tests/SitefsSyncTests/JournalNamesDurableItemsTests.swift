import Foundation
import SitefsProvider
@testable import SitefsSync
import Synchronization
import Testing

/// A journal row that names items is committed only after the backend has made what it keeps
/// of them durable (`DocumentBackend.makeDurable`): a WebDAV mount's number for a file it has
/// just created waits for the disk, and no durable row may outlive it in a power cut.
@Suite final class JournalNamesDurableItemsTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-named-\(UUID().uuidString)")
    private let site = ItemIdentifier.site("Harbour")
    private let file = ItemIdentifier(site: "Harbour", id: "41")

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private var journalPath: String { directory.appendingPathComponent("journal.sqlite").path }

    private func job(_ identifier: ItemIdentifier, staged: String) -> Uploader.Job {
        Uploader.Job(identifier: identifier, name: "plan.txt", parent: site, stagedPath: directory.appendingPathComponent(staged).path,
                     size: 4, baseVersion: "v1", modified: nil, content: Array("plan".utf8))
    }

    /// What the backend was asked, and what the journal held when it was asked.
    private final class Barrier: Sendable {
        let asked = Mutex<[[ItemIdentifier]]>([])
        let rowsWhenAsked = Mutex<[Int]>([])
        let failure = Mutex<ProviderError?>(nil)
        let journal = Mutex<UploadJournal?>(nil)

        func call(_ items: [ItemIdentifier]) throws {
            asked.withLock { $0.append(items) }
            let rows = try journal.withLock { $0 }.map { try $0.unfinished().count + $0.pendingOperations().count + $0.pendingRenames().count } ?? -1
            rowsWhenAsked.withLock { $0.append(rows) }
            if let failure = failure.withLock({ $0 }) { throw failure }
        }
    }

    private func journal(_ barrier: Barrier) throws -> UploadJournal {
        let journal = try UploadJournal(path: journalPath, backendDurable: { try barrier.call($0) })
        barrier.journal.withLock { $0 = journal }
        return journal
    }

    @Test func aRowThatNamesItemsAsksTheBackendBeforeItIsCommitted() throws {
        let barrier = Barrier()
        let journal = try journal(barrier)
        let save = job(file, staged: "a")
        try journal.record(save)
        let rename = Uploader.RenameJob(identifier: file, name: "new.txt", parent: site, serverName: "plan.txt", serverParent: site)
        try journal.recordRename(rename)
        var delete = NamespaceOperation(kind: .deleteFile, identifier: ItemIdentifier(site: "Harbour", id: "42"), name: "old.txt",
                                        parent: site, baseVersion: "v2")
        delete.sequence = try journal.record(delete)
        #expect(barrier.asked.withLock { $0 } == [[file, site], [file, site, site], [delete.identifier, site]])
        // Each was asked before its row was there.
        #expect(barrier.rowsWhenAsked.withLock { $0 } == [0, 1, 2])

        // A new file's confirmation names the server's item a newer save now aims at.
        let created = ItemIdentifier(site: "Harbour", id: "43")
        var newFile = job(.local(in: "Harbour"), staged: "b")
        newFile.baseVersion = nil
        try journal.record(newFile)
        var follower = job(newFile.identifier, staged: "c")
        try journal.record(follower)
        follower.identifier = created
        barrier.asked.withLock { $0 = [] }
        try journal.confirmed(newFile, producing: "put:1", rekeyed: follower)
        #expect(barrier.asked.withLock { $0 } == [[newFile.identifier, created]])

        // Rows that go name nothing new.
        barrier.asked.withLock { $0 = [] }
        try journal.dropRename(file)
        try journal.drop(stagedPath: save.stagedPath)
        try journal.finished([delete])
        #expect(barrier.asked.withLock { $0 }.isEmpty)
    }

    /// The backend cannot make them durable: the write fails as a failed commit does, and
    /// nothing is committed.
    @Test func aBackendThatCannotMakeThemDurableFailsTheWrite() throws {
        let barrier = Barrier()
        let journal = try journal(barrier)
        barrier.failure.withLock { $0 = .localIO("identity table: disk I/O error") }
        #expect(throws: ProviderError.self) { try journal.record(self.job(self.file, staged: "a")) }
        #expect(try journal.unfinished().isEmpty)
        barrier.failure.withLock { $0 = nil }
        try journal.record(job(file, staged: "a"))
        #expect(try journal.unfinished().count == 1)
    }
}
