import Foundation
import Glibc
import SitefsCore
import SitefsProvider
import SitefsSync
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// The mount's own write-back policy (`WriteBackDelays.editorAware`), on a clock only the
/// test moves: what may begin an editor's save sequence waits, everything else goes at once.
/// "At once" is checked with the clock standing still: nothing but the policy lets it go.
@Suite struct WriteBackPolicyTests {
    private let policy = WriteBackDelays.editorAware(editorSequence: .seconds(2), newFile: .milliseconds(250))

    /// Site "Harbour" with doc.odt on the server, looked up.
    private func harness() throws -> (CoreHarness, site: ItemIdentifier, document: ItemIdentifier, siteInode: InodeNumber) {
        let harness = try CoreHarness(delays: policy, clock: .manual())
        let site = harness.backend.addSite("Harbour")
        let document = harness.backend.add("doc.odt", in: site, kind: .file, content: Array("old".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        _ = try harness.lookup(siteInode, "doc.odt")
        return (harness, site, document, siteInode)
    }

    @Test func aSaveOfAServerFileInPlaceGoesAtOnce() throws {
        let (harness, _, document, siteInode) = try harness()
        defer { harness.remove() }
        try harness.saveInPlace(try harness.lookup(siteInode, "doc.odt").attributes.inode, "edited in place")
        #expect(eventually { harness.backend.content(of: document) == Array("edited in place".utf8) })
        #expect(harness.backend.calls("modifyContent") == 1)
    }

    @Test func aShellRedirectSendsOneVersionWithItsOutputNotTheEmptyFileFirst() throws {
        // `cmd > doc.odt`: the shell opens with O_TRUNC, moves the descriptor to the command's
        // stdout and closes its own (a flush of the still empty file), then the command writes
        // and exits (the last flush, and the release).
        let (harness, _, document, siteInode) = try harness()
        defer { harness.remove() }
        let inode = try harness.lookup(siteInode, "doc.odt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: harness.context).handle
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        #expect(!eventually(timeout: .milliseconds(150)) { harness.backend.calls("modifyContent") > 0 }, "the empty file went")
        try harness.write(inode, handle: handle, Array("the command's output".utf8))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        harness.filesystem.release(inode, handle: handle, flags: O_WRONLY)
        // The last close sends it, with the clock standing still.
        #expect(eventually { harness.backend.content(of: document) == Array("the command's output".utf8) })
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.calls("modifyContent") == 1)
    }

    @Test func aNewFileWaitsItsShortDelayOnly() throws {
        let (harness, site, _, siteInode) = try harness()
        defer { harness.remove() }
        _ = try harness.createFile(siteInode, "notes.txt", "hello")
        harness.clock.advance(by: .milliseconds(249))
        #expect(!eventually(timeout: .milliseconds(100)) { harness.backend.calls("createFile") > 0 }, "created before its delay ended")
        harness.clock.advance(by: .milliseconds(1))
        #expect(eventually { harness.backend.node(named: "notes.txt", in: site) != nil })
    }

    @Test func aTempFileRenamedOverADocumentIsItsNewVersionAtOnce() throws {
        // sed -i and LibreOffice: the rename ends the sequence, so its result does not wait.
        let (harness, _, document, siteInode) = try harness()
        defer { harness.remove() }
        _ = try harness.createFile(siteInode, "sedX1b2c3", "new content")
        try harness.rename(siteInode, "sedX1b2c3", to: "doc.odt")
        #expect(eventually { harness.backend.content(of: document) == Array("new content".utf8) })
        #expect(harness.backend.calls("modifyContent") == 1 && harness.backend.calls("createFile") == 0)
    }

    @Test func libreOfficesTempFileWaitsForItsRenameOnABusyMachine() throws {
        // LibreOffice closes its empty lu*.tmp, writes it, and renames it over the document:
        // on a loaded machine that takes longer than a new file's short wait.
        let (harness, site, document, siteInode) = try harness()
        defer { harness.remove() }
        _ = try harness.createFile(siteInode, "lu12158mn6qh.tmp", "")
        harness.clock.advance(by: .milliseconds(1_999))
        #expect(!eventually(timeout: .milliseconds(100)) { harness.backend.calls("createFile") > 0 }, "the temp file went")
        try harness.saveInPlace(try harness.lookup(siteInode, "lu12158mn6qh.tmp").attributes.inode, "saved by LibreOffice")
        try harness.rename(siteInode, "lu12158mn6qh.tmp", to: "doc.odt")
        #expect(eventually { harness.backend.content(of: document) == Array("saved by LibreOffice".utf8) })
        #expect(harness.backend.calls("createFile") == 0 && harness.backend.node(named: "lu12158mn6qh.tmp", in: site) == nil)
    }

    @Test func aTempFileGivenANewDocumentsNameGoesAfterTheShortWait() throws {
        // LibreOffice's "Save As" a new name: the rename ends the temp file's long wait.
        let (harness, site, _, siteInode) = try harness()
        defer { harness.remove() }
        _ = try harness.createFile(siteInode, "lu12158mn6qh.tmp", "a new report")
        harness.clock.advance(by: .milliseconds(1_000))
        try harness.rename(siteInode, "lu12158mn6qh.tmp", to: "report.odt")
        harness.clock.advance(by: .milliseconds(249))
        #expect(!eventually(timeout: .milliseconds(100)) { harness.backend.calls("createFile") > 0 }, "created before its delay ended")
        harness.clock.advance(by: .milliseconds(1))
        #expect(eventually { harness.backend.node(named: "report.odt", in: site) != nil })
    }

    @Test func editorsTempNamesAreTheirs() {
        for name in ["lu12158mn6qh.tmp", "luA.tmp", "sedX1b2c3", ".goutputstream-AB12cd"] {
            #expect(WriteBackDelays.isEditorTempName(name), "\(name)")
        }
        for name in ["lu.tmp", "lunch.tmp.odt", "lu-1.tmp", "sed", "sedX1b2c", "sedX1b2c3d", "sedán1", "plan.tmp", ".goutputstream-"] {
            #expect(!WriteBackDelays.isEditorTempName(name), "\(name)")
        }
    }

    @Test func aRenameGoesAtOnceAndOneToABackupNameWaitsForTheEditor() throws {
        let (harness, site, document, siteInode) = try harness()
        defer { harness.remove() }
        try harness.rename(siteInode, "doc.odt", to: "plan.odt")
        #expect(eventually { harness.backend.node(named: "plan.odt", in: site)?.identifier == document })
        // vim's first step: the original moves to its backup name, and the new file comes next.
        try harness.rename(siteInode, "plan.odt", to: "plan.odt~")
        harness.clock.advance(by: .milliseconds(1_999))
        #expect(!eventually(timeout: .milliseconds(100)) { harness.backend.node(named: "plan.odt~", in: site) != nil },
                "the backup rename went before the editor could fold it")
        harness.clock.advance(by: .milliseconds(1))
        #expect(eventually { harness.backend.node(named: "plan.odt~", in: site)?.identifier == document })
    }

    @Test func vimsSaveStillEndsAsOneNewVersion() throws {
        let (harness, site, document, siteInode) = try harness()
        defer { harness.remove() }
        try harness.rename(siteInode, "doc.odt", to: "doc.odt~")
        _ = try harness.createFile(siteInode, "doc.odt", "written by vim")
        try harness.unlink(siteInode, "doc.odt~")
        #expect(eventually { harness.backend.content(of: document) == Array("written by vim".utf8) })
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(harness.backend.calls("modifyContent") == 1)
        #expect(harness.backend.calls("createFile") == 0 && harness.backend.calls("update") == 0 && harness.backend.calls("delete") == 0)
        #expect(harness.backend.node(named: "doc.odt", in: site)?.identifier == document)
    }

    @Test func theOptionsBoundEachOther() {
        #expect(WriteBackDelays.editorAware(editorSequence: .milliseconds(100), newFile: .seconds(1)).newFile == .milliseconds(100))
        #expect(WriteBackDelays.isBackupName("plan.odt~") && WriteBackDelays.isBackupName("plan.odt.~1~"))
        #expect(!WriteBackDelays.isBackupName("~") && !WriteBackDelays.isBackupName("~$plan.odt"))
    }
}
