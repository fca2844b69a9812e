import Foundation
import SitefsCore
import SitefsProvider
import SystemPackage
import SitefsTestSupport
import Testing

/// The daemon's controls on the mount root are attributes it acts on when they are read, so
/// the mount's owner can use them on the read-only root (issue 16), and nobody else can.
@Suite struct ControlAttributeTests {
    /// A core with one new file saved and waiting out an hour's write-back delay.
    private func harnessWithAWaitingSave() throws -> CoreHarness {
        let harness = try CoreHarness(writeBackDelay: .seconds(3600))
        harness.backend.addSite("Harbour")
        try harness.createFile(try harness.lookup(.root, "Harbour").attributes.inode, "notes.txt", "draft")
        return harness
    }

    /// Reads a control (or status) attribute of the mount root as the owner.
    private func readRoot(_ harness: CoreHarness, _ name: String) throws -> [UInt8] {
        try harness.filesystem.getExtendedAttribute(.root, name: name, context: harness.context)
    }

    @Test func readingTheSyncControlSendsWhatWaitsOutTheDelayAndAnswersTheStatus() throws {
        let harness = try harnessWithAWaitingSave()
        defer { harness.remove() }
        #expect(harness.backend.calls("createFile") == 0, "sent before its delay")
        let answer = try readRoot(harness, "user.sitefs.control.sync")
        #expect(String(decoding: answer, as: UTF8.self).contains("\"pending\""), "the answer is the status")
        _ = eventually { harness.backend.calls("createFile") == 1 }
        #expect(harness.backend.calls("createFile") == 1, "the control did not send the waiting save")
    }

    @Test func readingTheRetryControlQueuesFailedUploadsAgain() throws {
        let harness = try harnessWithAWaitingSave()
        defer { harness.remove() }
        harness.backend.fail(with: .forbidden("test: refused"))
        _ = try readRoot(harness, "user.sitefs.control.sync")
        _ = eventually { (try? harness.xattr(.root, "user.sitefs.status").contains("test: refused")) == true }
        harness.backend.fail(with: nil)
        // The refusal was met twice: the upload, and the try to rescue it under another name.
        let tries = harness.backend.calls("createFile")
        _ = try readRoot(harness, "user.sitefs.control.retry")
        _ = eventually { harness.backend.calls("createFile") == tries + 1 }
        #expect(harness.backend.calls("createFile") == tries + 1, "the failed upload was not tried again")
    }

    @Test func onlyTheOwnerAndRootMayReadTheStatusOrUseTheControls() throws {
        let harness = try CoreHarness()
        defer { harness.remove() }
        let stranger = RequestContext(uid: harness.context.uid + 1, gid: harness.context.gid + 1, pid: 1)
        let root = RequestContext(uid: 0, gid: 0, pid: 1)
        for name in ["user.sitefs.status", "user.sitefs.status.settled", "user.sitefs.control.sync", "user.sitefs.control.retry"] {
            #expect(throws: Errno.permissionDenied, "\(name) answered a stranger") {
                try harness.filesystem.getExtendedAttribute(.root, name: name, context: stranger)
            }
            #expect(try !harness.filesystem.getExtendedAttribute(.root, name: name, context: root).isEmpty)
            #expect(try !harness.filesystem.getExtendedAttribute(.root, name: name, context: harness.context).isEmpty)
        }
        for name in ["user.sitefs.sync", "user.sitefs.retry"] {
            #expect(throws: Errno.permissionDenied, "\(name) obeyed a stranger") {
                try harness.filesystem.setExtendedAttribute(.root, name: name, value: [], flags: 0, context: stranger)
            }
        }
    }
}
