import Foundation
import Logging
import SitefsConcurrency
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Synchronization
import Testing

/// The journal on a disk that fills up, or that is read-only, with real files: a small
/// tmpfs holds the journal (staging stays on the ordinary disk, as a journal write is what
/// is under test). What a close() was told is safe is never lost, what cannot be recorded
/// fails its caller, and the user is told. Mounting a tmpfs needs root, which CI has.
@Suite(.serialized, .enabled(if: SmallDisk.canMount, "needs root to mount a small tmpfs"))
final class JournalFailureTests {
    private let staging = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-journal-fail-\(UUID().uuidString)")
    private let disk: SmallDisk
    private let clock = MountClock.manual()
    private let backend = InMemoryBackend()
    private let troubles = TroubleLog()

    init() throws {
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        disk = try SmallDisk(bytes: 1 << 20)
    }

    deinit {
        disk.unmount()
        try? FileManager.default.removeItem(at: staging)
    }

    private var journalPath: String { disk.path + "/journal.sqlite" }

    private func uploader(settle: Duration = .seconds(1)) throws -> Uploader {
        var logger = Logger(label: "sitefs-journal-fail-test")
        logger.logLevel = .critical
        let uploader = try Uploader(backend: backend, journalPath: journalPath, parallelism: 1, delays: .uniform(settle),
                                    userName: "tester", unlinker: BackgroundUnlinker(), clock: clock, logger: logger) { _ in }
        uploader.onJournalTrouble = { [troubles] problem in troubles.reports.withLock { $0.append(problem) } }
        return uploader
    }

    /// A snapshot of `text` in staging, as the core makes one on close().
    private func save(_ text: String, of file: ItemIdentifier, basedOn version: String?, name: String) throws -> Uploader.Job {
        let path = staging.appendingPathComponent(UUID().uuidString).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return Uploader.Job(identifier: file, name: name, parent: nil, stagedPath: path, size: Int64(text.utf8.count),
                            baseVersion: version, modified: nil)
    }

    private func version(of file: ItemIdentifier) throws -> String { try backend.item(file).version }

    @Test func aFullDiskFailsNewSavesKeepsTheRecordedOnesAndSaysSo() throws {
        let site = backend.addSite("Harbour")
        let plan = backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let uploader = try uploader()
        uploader.start(parallelism: 1)
        defer { uploader.shutdown(waitingUpTo: .seconds(5)) }

        // Recorded while the disk had room: close() was told it is safe.
        let recorded = try save("second draft", of: plan, basedOn: try version(of: plan), name: "plan.txt")
        try uploader.enqueue(recorded)
        try disk.fill()

        // Nothing can be recorded now: a new save fails its caller instead of pretending.
        let unrecorded = try save("third draft", of: plan, basedOn: try version(of: plan), name: "plan.txt")
        #expect(throws: (any Error).self) { try uploader.enqueue(unrecorded) }
        #expect(uploader.status.journalProblem != nil, "sitefs status does not say the journal cannot be written")

        // The recorded save goes; its row cannot be dropped, so its snapshot stays with it.
        clock.advance(by: .seconds(1))
        #expect(eventually { backend.content(of: plan) == Array("second draft".utf8) }, "the recorded save reaches the server")
        #expect(uploader.waitUntilIdle(timeout: .seconds(10)))
        #expect(FileManager.default.fileExists(atPath: recorded.stagedPath), "a snapshot went while the journal still names it")
        let problem = try #require(uploader.status.journalProblem)
        #expect(problem.contains("1 changes wait to be recorded"), "\(problem)")
        #expect(eventually { troubles.reports.withLock { $0.count == 1 && $0[0] != nil } }, "the user is told once")

        // Room again: the owed write is made at the next retry, the snapshot goes, all clear.
        disk.free()
        clock.advance(by: Uploader.journalRetryInterval)
        #expect(eventually { uploader.status.journalProblem == nil }, "the journal recovers")
        #expect(eventually { !FileManager.default.fileExists(atPath: recorded.stagedPath) }, "the snapshot goes once its row is dropped")
        #expect(eventually { troubles.reports.withLock { $0.last == .some(nil) } }, "the user is told it is over")
        try uploader.enqueue(try save("fourth draft", of: plan, basedOn: try version(of: plan), name: "plan.txt"))
        clock.advance(by: .seconds(1))
        #expect(uploader.waitUntilIdle(timeout: .seconds(10)))
        #expect(backend.content(of: plan) == Array("fourth draft".utf8))
    }

    /// fsyncdir after `rm` with the disk full: the deletes cannot be made to survive a power
    /// cut, and the caller is told (EIO) rather than promised they will; with room again it is.
    @Test func aFolderFsyncThatCannotFlushTheDeletesFailsAndSaysSo() throws {
        let site = backend.addSite("Harbour")
        let plan = backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let uploader = try uploader()
        defer { uploader.shutdown() }  // never started: the delete stays queued
        try uploader.enqueueOperation(NamespaceOperation(kind: .deleteFile, identifier: plan, name: "plan.txt", parent: site,
                                                         baseVersion: try version(of: plan)))
        try disk.fill()
        #expect(throws: (any Error).self) { try uploader.syncJournal() }
        #expect(uploader.status.journalProblem != nil, "sitefs status does not say the journal cannot be written")
        disk.free()
        try uploader.syncJournal()
        #expect(uploader.status.journalProblem == nil, "the problem is still shown once the fsync went through")
    }

    /// The mount stops while the journal still owes a write: the next run replays the row it
    /// kept, finds its own bytes on the server and makes neither a duplicate nor a loss.
    @Test func aRestartWhileWritesAreOwedReplaysWithoutALossOrADuplicate() throws {
        let site = backend.addSite("Harbour")
        let plan = backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        do {
            let first = try uploader()
            first.start(parallelism: 1)
            try first.enqueue(try save("second draft", of: plan, basedOn: try version(of: plan), name: "plan.txt"))
            try disk.fill()
            clock.advance(by: .seconds(1))
            #expect(first.waitUntilIdle(timeout: .seconds(10)))
            #expect(first.status.journalProblem != nil)
            #expect(first.shutdown(waitingUpTo: .seconds(5)))
        }
        disk.free()
        let second = try uploader(settle: .zero)
        #expect(second.status.pending == 1, "the row the first run could not drop is not replayed")
        second.start(parallelism: 1)
        defer { second.shutdown(waitingUpTo: .seconds(5)) }
        #expect(second.waitUntilIdle(timeout: .seconds(10)))
        #expect(backend.content(of: plan) == Array("second draft".utf8))
        #expect(backend.nodes(in: site).map(\.name) == ["plan.txt"], "a conflict copy of the mount's own save was made")
        #expect(second.status.pending == 0 && second.status.failed.isEmpty && second.status.journalProblem == nil)
    }

    /// A journal that can be read but not written (a read-only filesystem) refuses to start:
    /// a mount whose every save would fail must not come up. Its saves are all still there.
    @Test func aReadOnlyJournalIsRefusedAtStartAndKeepsItsSaves() throws {
        let site = backend.addSite("Harbour")
        let plan = backend.add("plan.txt", in: site, kind: .file, content: Array("v1".utf8))
        let job = try save("second draft", of: plan, basedOn: try version(of: plan), name: "plan.txt")
        do {
            let first = try uploader()  // never started: the save stays in the journal
            try first.enqueue(job)
            first.shutdown()
        }
        try disk.remount(readOnly: true)
        #expect { _ = try self.uploader() } throws: { error in
            "\(error)".contains("cannot be opened for writing")
        }
        try disk.remount(readOnly: false)
        let reopened = try uploader()
        #expect(reopened.latestSave(of: plan)?.stagedPath == job.stagedPath, "the save recorded before is gone")
        reopened.shutdown()
    }
}

/// What the uploader told through `onJournalTrouble`, in order.
private final class TroubleLog: Sendable {
    let reports = Mutex<[String?]>([])
}
