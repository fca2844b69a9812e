import Foundation
import SitefsProvider
@testable import SitefsSync
import Testing

/// Deletes and rmdirs are kept as POSIX keeps them: the journal commits them without
/// waiting for the disk (they survive the daemon's death at once), and fsyncdir
/// (`UploadJournal.flush`) makes them survive a power cut. Every other commit still waits.
@Suite final class RemovalDurabilityTests {
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-removals-\(UUID().uuidString)")

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    private var journalPath: String { directory.appendingPathComponent("journal.sqlite").path }

    private func operation(_ kind: NamespaceOperation.Kind, _ name: String) -> NamespaceOperation {
        NamespaceOperation(kind: kind, identifier: ItemIdentifier(site: "Harbour", id: name), name: name, parent: .site("Harbour"),
                           baseVersion: kind == .deleteFile ? "v1" : nil)
    }

    @Test func removalsWaitForTheFolderFsyncAndEveryOtherCommitFlushes() throws {
        let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
        var delete = operation(.deleteFile, "plan.txt")
        delete.sequence = try journal.record(delete)
        var rmdir = operation(.removeFolder, "old")
        rmdir.sequence = try journal.record(rmdir)
        #expect(journal.unflushedCommits == 2, "a delete and an rmdir waited for the disk")
        #expect(try journal.synchronousSetting() == 2, "the connection was left without FULL")

        try journal.finished([rmdir])
        #expect(journal.unflushedCommits == 3, "a finished rmdir's row waited for the disk")

        // A mkdir commits as every save does, and flushes the removals before it with it.
        var mkdir = operation(.makeFolder, "new")
        mkdir.sequence = try journal.record(mkdir)
        #expect(journal.unflushedCommits == 0)

        // A flushed commit that changed nothing wrote nothing and flushed nothing.
        delete.sequence = try journal.record(operation(.deleteFile, "notes.txt"))
        try journal.drop(stagedPath: "/nowhere")
        #expect(journal.unflushedCommits == 1)

        try journal.flush()
        #expect(journal.unflushedCommits == 0)
        #expect(try journal.synchronousSetting() == 2)
    }

    /// What was committed without a flush is in the journal for the next run at once: a
    /// daemon killed right after `rm` still sends the delete.
    @Test func anUnflushedRemovalIsReadByTheNextRun() throws {
        let journal = try UploadJournal(path: journalPath, backendDurable: { _ in })
        _ = try journal.record(operation(.deleteFile, "plan.txt"))
        _ = try journal.record(operation(.removeFolder, "old"))
        let nextRun = try UploadJournal(path: journalPath, backendDurable: { _ in })
        #expect(try nextRun.pendingOperations().map(\.name) == ["plan.txt", "old"])
        withExtendedLifetime(journal) {}
    }
}
