import Foundation
import SitefsCore
import SitefsTestSupport
import SystemPackage
import Testing

/// `stateChanges(since:)`: what the file manager's emblems are told. Only changes, each
/// once; an item back to online-only told once and forgotten; a path that stands for
/// another item now told "look again".
@Suite struct StateChangeTests {
    @Test func aSaveAPinAndANewFileAreToldOnceEach() throws {
        let harness = try CoreHarness(writeBackDelay: .seconds(3_600))
        defer { harness.remove(); harness.filesystem.unmounting() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("a.txt", in: site, kind: .file, content: Array("a".utf8))
        harness.backend.add("b.txt", in: site, kind: .file, content: Array("b".utf8))
        harness.mount()
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        var told = ToldStates()
        #expect(harness.filesystem.stateChanges(since: &told).isEmpty, "nothing differs from online-only yet")

        let a = try harness.lookup(siteInode, "a.txt").attributes.inode
        try harness.saveInPlace(a, "a, edited")
        #expect(harness.filesystem.stateChanges(since: &told) == [StateChange(path: "Harbour/a.txt", state: "pending")])
        #expect(harness.filesystem.stateChanges(since: &told).isEmpty, "told once")

        _ = try harness.createFile(siteInode, "c.txt", "new")
        #expect(harness.filesystem.stateChanges(since: &told) == [StateChange(path: "Harbour/c.txt", state: "pending")])

        _ = try harness.filesystem.getExtendedAttribute(.root, name: "user.sitefs.control.sync", context: harness.context)
        #expect(eventually { harness.filesystem.mountStatus.uploads.pending == 0 })
        #expect(eventually { harness.contentFiles.isEmpty })
        let sent = Set(harness.filesystem.stateChanges(since: &told).map { "\($0.path)=\($0.state ?? "nil")" })
        // a.txt is back to online-only; c.txt's local identity became a server one: its path is
        // told "look again" (and the server item is online-only, the default, so nothing more).
        #expect(sent == ["Harbour/a.txt=online-only", "Harbour/c.txt=nil"], "\(sent)")
        #expect(told.count == 0, "nothing left to watch")

        let b = try harness.lookup(siteInode, "b.txt").attributes.inode
        _ = try harness.filesystem.getExtendedAttribute(b, name: "user.sitefs.control.pin", context: harness.context)
        #expect(eventually { (try? harness.xattr(b, "user.sitefs.state")) == "downloaded" })
        let pinned = harness.filesystem.stateChanges(since: &told)
        #expect(pinned.last == StateChange(path: "Harbour/b.txt", state: "downloaded"), "\(pinned)")
    }
}
