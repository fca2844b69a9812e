import Foundation
import SitefsAPI
import SitefsCore
import SitefsProvider
import SystemPackage
import SitefsTestSupport
import Testing

/// Permission bits, ownership, symbolic links and the mount's own times, as the core keeps
/// them over an in-memory server (the mount tests do the same through a kernel).
@Suite struct ModesAndLinksCoreTests {
    private struct World {
        let harness: CoreHarness
        let folder: ItemIdentifier
        let folderInode: InodeNumber
        let report: ItemIdentifier
        var filesystem: SitefsFilesystem { harness.filesystem }
        var backend: InMemoryBackend { harness.backend }
        func inode(_ name: String) throws -> InodeNumber { try harness.lookup(folderInode, name).attributes.inode }
        func mode(_ name: String) throws -> UInt32 { try harness.lookup(folderInode, name).attributes.mode }
        func setAttributes(_ name: String, _ changes: AttributeChanges) throws(Errno) -> FileAttributes {
            let inode = try harness.lookup(folderInode, name).attributes.inode
            return try filesystem.setAttributes(of: inode, changes, handle: nil, context: harness.context).attributes
        }
    }

    private func world(readOnlyReport: Bool = false) throws -> World {
        let harness = try CoreHarness(writeBackDelay: .zero)
        let site = harness.backend.addSite("Harbour")
        let folder = harness.backend.add("Forms", in: site, kind: .folder)
        let report = harness.backend.add("report.odt", in: folder, kind: .file, content: Array("report".utf8), readOnly: readOnlyReport)
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let folderInode = try harness.lookup(siteInode, "Forms").attributes.inode
        return World(harness: harness, folder: folder, folderInode: folderInode, report: report)
    }

    private func finish(_ world: World) {
        world.filesystem.unmounting()
        world.harness.remove()
    }

    @Test func chmodIsKeptOnTheServerAndShown() throws {
        let world = try world()
        defer { finish(world) }
        #expect(try world.mode("report.odt") == 0o100644, "no mode on the server: the default")
        let shown = try world.setAttributes("report.odt", AttributeChanges(mode: 0o100755))
        #expect(shown.mode == 0o100755)
        #expect(try world.backend.item(world.report).mode == 0o755, "the server has it")
        _ = try world.setAttributes("report.odt", AttributeChanges(mode: 0o100600))
        #expect(try world.backend.item(world.report).mode == 0o600)
        #expect(try world.mode("report.odt") == 0o100600)
    }

    @Test func aReadOnlyGrantShowsNoWriteBitsAndKeepsItsMode() throws {
        let world = try world(readOnlyReport: true)
        defer { finish(world) }
        #expect(try world.mode("report.odt") == 0o100444)
        #expect(throws: Errno.notPermitted) { try world.setAttributes("report.odt", AttributeChanges(mode: 0o100777)) }
        #expect(try world.backend.item(world.report).mode == nil)
        _ = try world.setAttributes("report.odt", AttributeChanges(mode: 0o100444))  // what it shows: nothing to change

        // A site's folder: its mode is the grant's; setting the one shown (rsync -a) is fine.
        let site = try world.harness.lookup(.root, "Harbour").attributes
        let context = world.harness.context
        _ = try world.filesystem.setAttributes(of: site.inode, AttributeChanges(mode: site.mode), handle: nil, context: context)
        #expect(throws: Errno.notPermitted) {
            try world.filesystem.setAttributes(of: site.inode, AttributeChanges(mode: 0o040700), handle: nil, context: context)
        }
    }

    @Test func ownershipIsTheMountsButForWhatRootGaveAndWhatOthersMade() throws {
        let world = try world()
        defer { finish(world) }
        let before = try world.harness.lookup(world.folderInode, "report.odt").attributes
        #expect(before.uid == 1000 && before.gid == 1000)
        _ = try world.setAttributes("report.odt", AttributeChanges(uid: 1000, gid: 1000))
        _ = try world.setAttributes("report.odt", AttributeChanges(uid: UInt32.max, gid: 1000))
        #expect(throws: Errno.notPermitted) { try world.setAttributes("report.odt", AttributeChanges(uid: 0)) }
        #expect(throws: Errno.notPermitted) { try world.setAttributes("report.odt", AttributeChanges(gid: 4242)) }

        // Root gives files away on this mount (the server keeps no owners).
        let root = RequestContext(uid: 0, gid: 0, pid: 1)
        let inode = try world.inode("report.odt")
        let given = try world.filesystem.setAttributes(of: inode, AttributeChanges(uid: 65534, gid: 65533), handle: nil,
                                                       context: root).attributes
        #expect(given.uid == 65534 && given.gid == 65533)
        #expect(try world.harness.lookup(world.folderInode, "report.odt").attributes.uid == 65534)

        // Another user's new file (through --allow-other) is theirs.
        let other = RequestContext(uid: 2000, gid: 2001, pid: 1)
        let (made, open) = try world.filesystem.create(parent: world.folderInode, name: FileName("theirs.txt"), mode: 0o644,
                                                        flags: O_WRONLY | O_CREAT, context: other)
        #expect(made.attributes.uid == 2000 && made.attributes.gid == 2001)
        world.filesystem.release(made.attributes.inode, handle: open.handle, flags: O_WRONLY)
        #expect(world.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(try world.harness.lookup(world.folderInode, "theirs.txt").attributes.uid == 2000, "still theirs once uploaded")
    }

    @Test func aNewFileAndFolderKeepTheModeTheyWereMadeWith() throws {
        let world = try world()
        defer { finish(world) }
        let (entry, open) = try world.filesystem.create(parent: world.folderInode, name: FileName("run.sh"), mode: 0o700,
                                                         flags: O_WRONLY | O_CREAT, context: world.harness.context)
        #expect(entry.attributes.mode == 0o100700)
        world.filesystem.release(entry.attributes.inode, handle: open.handle, flags: O_WRONLY)
        #expect(world.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(world.backend.node(named: "run.sh", in: world.folder)?.mode == 0o700, "made on the server with its mode")
        let folder = try world.filesystem.makeDirectory(parent: world.folderInode, name: FileName("private"), mode: 0o700,
                                                        context: world.harness.context)
        #expect(folder.attributes.mode == 0o040700)
        #expect(world.backend.node(named: "private", in: world.folder)?.mode == 0o700, "the folder's mode is on the server")
    }

    @Test func aSymbolicLinkIsMadeReadRenamedAndRemoved() throws {
        let world = try world()
        defer { finish(world) }
        let target = Array("../Plans/site plan.pdf".utf8)
        let entry = try world.filesystem.makeSymlink(parent: world.folderInode, name: FileName("plan"), target: target,
                                                     context: world.harness.context)
        #expect(entry.attributes.mode == 0o120777)
        #expect(entry.attributes.size == UInt64(target.count))
        let onServer = try #require(world.backend.node(named: "plan", in: world.folder))
        #expect(onServer.kind == .symlink && onServer.symlinkTarget == target)
        #expect(try world.filesystem.readLink(entry.attributes.inode, context: world.harness.context) == target)

        try world.harness.rename(world.folderInode, "plan", to: "plan link")
        #expect(try world.filesystem.readLink(try world.inode("plan link"), context: world.harness.context) == target)
        #expect(world.backend.node(named: "plan link", in: world.folder)?.kind == .symlink)
        try world.harness.unlink(world.folderInode, "plan link")
        #expect(world.filesystem.waitForUploads(timeout: .seconds(10)))
        #expect(world.backend.node(named: "plan link", in: world.folder) == nil)
    }

    @Test func aLinksTargetIsReadFromItsContentWhenTheListingLacksIt() throws {
        let world = try world()
        defer { finish(world) }
        // As a WebDAV `.rclonelink` file lists: a link whose target is its content.
        let link = world.backend.add("latest", in: world.folder, kind: .symlink, content: Array("report.odt".utf8))
        #expect(try world.backend.item(link).symlinkTarget == nil)
        let inode = try world.inode("latest")
        #expect(try world.harness.lookup(world.folderInode, "latest").attributes.mode == 0o120777)
        #expect(try world.filesystem.readLink(inode, context: world.harness.context) == Array("report.odt".utf8))
    }

    @Test func badTargetsAreRefusedWithTheErrnoSymlinkGives() throws {
        let world = try world()
        defer { finish(world) }
        let context = world.harness.context
        #expect(throws: Errno.noSuchFileOrDirectory) {
            try world.filesystem.makeSymlink(parent: world.folderInode, name: FileName("empty"), target: [], context: context)
        }
        #expect(throws: Errno.fileNameTooLong) {
            try world.filesystem.makeSymlink(parent: world.folderInode, name: FileName("long"),
                                             target: Array(repeating: UInt8(ascii: "a"), count: 4096), context: context)
        }
        #expect(throws: Errno.fileExists) {
            try world.filesystem.makeSymlink(parent: world.folderInode, name: FileName("report.odt"), target: Array("x".utf8),
                                             context: context)
        }
        #expect(throws: Errno.invalidArgument) {
            try world.filesystem.readLink(try world.inode("report.odt"), context: context)
        }
    }

    @Test func chmodAndRenameMoveTheChangeTimeAndSettingTimesKeepsThem() throws {
        let world = try world()
        defer { finish(world) }
        let before = try world.harness.lookup(world.folderInode, "report.odt").attributes
        #expect(before.changeTime == before.modificationTime && before.accessTime == before.modificationTime)
        let changed = try world.setAttributes("report.odt", AttributeChanges(mode: 0o100640))
        #expect(changed.modificationTime == before.modificationTime, "chmod changes no content")
        #expect(changed.changeTime.seconds > before.changeTime.seconds)

        let access = TimeSpec(seconds: 1_600_000_000, nanoseconds: 5)
        let modified = TimeSpec(seconds: 1_600_000_100, nanoseconds: 123_456_789)
        let set = try world.setAttributes("report.odt", AttributeChanges(accessTime: .at(access), modificationTime: .at(modified)))
        #expect(set.accessTime == access)
        #expect(set.modificationTime == modified, "read back to the nanosecond, though the server keeps microseconds")
        #expect(try world.backend.item(world.report).modified.microseconds == 1_600_000_100_123_456)
        // UTIME_OMIT for both: nothing set, nothing changed.
        let again = try world.setAttributes("report.odt", AttributeChanges())
        #expect(again.accessTime == access && again.modificationTime == modified)

        let folderBefore = try world.filesystem.attributes(of: world.folderInode, handle: nil, context: world.harness.context).attributes
        try world.harness.rename(world.folderInode, "report.odt", to: "report (old).odt")
        let folderAfter = try world.filesystem.attributes(of: world.folderInode, handle: nil, context: world.harness.context).attributes
        #expect(folderAfter.modificationTime.seconds >= folderBefore.modificationTime.seconds)
        #expect(folderAfter.modificationTime != folderBefore.modificationTime, "a rename inside changes the folder")
        // A time set on the folder afterwards (rsync -a) is what it shows.
        let folderTime = TimeSpec(seconds: 1_500_000_000, nanoseconds: 0)
        let setFolder = try world.filesystem.setAttributes(of: world.folderInode, AttributeChanges(modificationTime: .at(folderTime)),
                                                           handle: nil, context: world.harness.context).attributes
        #expect(setFolder.modificationTime == folderTime)
    }
}
