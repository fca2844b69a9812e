import Foundation
import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Testing

/// chmod and symlink while the server is unreachable: shown at once, journaled, replayed in
/// the order made once it is back, and kept across a restart of the daemon.
@Suite struct OfflineModesAndLinksTests {
    private struct World {
        let harness: CoreHarness
        let site: ItemIdentifier
        let siteInode: InodeNumber
        let doc: ItemIdentifier
    }

    private func offlineWorld() throws -> World {
        let harness = try CoreHarness(writeBackDelay: .zero)
        let site = harness.backend.addSite("Harbour")
        let doc = harness.backend.add("run.sh", in: site, kind: .file, content: Array("echo hi".utf8))
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        _ = try harness.list(siteInode)
        goOffline(harness)
        return World(harness: harness, site: site, siteInode: siteInode, doc: doc)
    }

    private func goOffline(_ harness: CoreHarness) {
        harness.backend.fail(with: .unreachable("test: the network is down"))
        harness.filesystem.pollChangeFeedOnce()
        harness.filesystem.pollChangeFeedOnce()
    }

    private func chmod(_ harness: CoreHarness, _ parent: InodeNumber, _ name: String, _ mode: UInt32) throws -> UInt32 {
        let inode = try harness.lookup(parent, name).attributes.inode
        return try harness.filesystem.setAttributes(of: inode, AttributeChanges(mode: mode), handle: nil,
                                                   context: harness.context).attributes.mode
    }

    private func symlink(_ harness: CoreHarness, _ parent: InodeNumber, _ name: String, _ target: String) throws -> InodeNumber {
        try harness.filesystem.makeSymlink(parent: parent, name: FileName(name), target: Array(target.utf8),
                                           context: harness.context).attributes.inode
    }

    @Test func aChmodMadeOfflineIsShownAtOnceAndReachesTheServerWhenItIsBack() throws {
        let world = try offlineWorld()
        defer { world.harness.remove() }
        #expect(try chmod(world.harness, world.siteInode, "run.sh", 0o100755) == 0o100755)
        #expect(try world.harness.lookup(world.siteInode, "run.sh").attributes.mode == 0o100755)
        #expect(world.harness.backend.node(named: "run.sh", in: world.site)?.mode == nil, "nothing reached the server yet")

        world.harness.backend.fail(with: nil)
        #expect(world.harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(try world.harness.backend.item(world.doc).mode == 0o755)
        #expect(try world.harness.lookup(world.siteInode, "run.sh").attributes.mode == 0o100755)
    }

    @Test func aLinkMadeOfflineIsReadableAtOnceAndMadeOnTheServerWhenItIsBack() throws {
        let world = try offlineWorld()
        defer { world.harness.remove() }
        let inode = try symlink(world.harness, world.siteInode, "latest", "run.sh")
        #expect(try world.harness.filesystem.readLink(inode, context: world.harness.context) == Array("run.sh".utf8))
        #expect(try world.harness.lookup(world.siteInode, "latest").attributes.mode == 0o120777)
        // Renamed before it went: made under the new name.
        try world.harness.rename(world.siteInode, "latest", to: "current")
        #expect(world.harness.backend.calls("createSymlink") == 0)

        world.harness.backend.fail(with: nil)
        #expect(world.harness.filesystem.waitForUploads(timeout: .seconds(20)))
        let link = try #require(world.harness.backend.node(named: "current", in: world.site))
        #expect(link.kind == .symlink && link.symlinkTarget == Array("run.sh".utf8))
        #expect(world.harness.backend.node(named: "latest", in: world.site) == nil)
        // The inode now stands for the server's link.
        #expect(try world.harness.xattr(inode, "user.sitefs.id") == link.identifier.id)
    }

    @Test func aFolderMadeAndChmoddedOfflineIsMadeWithItsMode() throws {
        let world = try offlineWorld()
        defer { world.harness.remove() }
        let folder = try world.harness.filesystem.makeDirectory(parent: world.siteInode, name: FileName("private"), mode: 0o700,
                                                                context: world.harness.context)
        #expect(folder.attributes.mode == 0o040700)
        world.harness.backend.fail(with: nil)
        #expect(world.harness.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(world.harness.backend.node(named: "private", in: world.site)?.mode == 0o700)
    }

    @Test func aChmodAndALinkMadeOfflineSurviveARestartOfTheDaemon() throws {
        var first: CoreHarness? = try CoreHarness(writeBackDelay: .zero)
        let site = first!.backend.addSite("Harbour")
        let doc = first!.backend.add("run.sh", in: site, kind: .file, content: Array("echo hi".utf8))
        let siteInode = try first!.lookup(.root, "Harbour").attributes.inode
        _ = try first!.list(siteInode)
        goOffline(first!)
        _ = try chmod(first!, siteInode, "run.sh", 0o100700)
        _ = try symlink(first!, siteInode, "latest", "run.sh")
        let previous = first!
        previous.filesystem.unmounting()
        first = nil  // the daemon stops with both journaled
        previous.backend.fail(with: nil)

        let second = try CoreHarness(reusing: previous)
        defer { second.remove() }
        #expect(second.filesystem.waitForUploads(timeout: .seconds(20)))
        #expect(try second.backend.item(doc).mode == 0o700)
        let link = try #require(second.backend.node(named: "latest", in: site))
        #expect(link.symlinkTarget == Array("run.sh".utf8))
    }
}
