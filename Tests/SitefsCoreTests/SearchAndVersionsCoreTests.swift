import Foundation
import SitefsAPI
import SitefsCore
import SitefsProvider
import SystemPackage
import SitefsTestSupport
import Testing

/// The search folder (`MOUNT/.search/QUERY/`), the versions folder (`MOUNT/.versions/PATH/`)
/// and the version controls, as the core answers them over an in-memory server that
/// searches and keeps versions (the mount tests do the same through a kernel).
@Suite struct SearchAndVersionsCoreTests {
    private struct Results: Decodable {
        struct Hit: Decodable {
            var entry: String?
            var path: String
            var matched: [String]
        }

        var coverage: String
        var note: String?
        var hits: [Hit]
        var next: String?
        var error: String?
    }

    private struct Versions: Decodable {
        struct Version: Decodable {
            var id: String
            var current: Bool
            var size: Int64
        }

        var versions: [Version]
        var error: String?
    }

    private func world(searching: Bool = true) throws -> (CoreHarness, site: InodeNumber, plans: InodeNumber) {
        let harness = try CoreHarness(writeBackDelay: .zero)
        harness.backend.setSearching(searching)
        let (site, plans) = try harness.mountPlansSite()
        return (harness, site, plans)
    }

    private func finish(_ harness: CoreHarness) {
        harness.filesystem.unmounting()
        harness.remove()
    }

    private func searchFolder(_ harness: CoreHarness, _ query: String) throws -> InodeNumber {
        let root = try harness.lookup(.root, ".search").attributes.inode
        return try harness.lookup(root, query).attributes.inode
    }

    private func results(_ harness: CoreHarness, _ folder: InodeNumber) throws -> Results {
        try JSONDecoder().decode(Results.self, from: Data(harness.xattr(folder, "user.sitefs.control.results").utf8))
    }

    @Test func theSearchFolderListsTheMatchingFilesUnderTheirOwnInodes() throws {
        let (harness, _, plans) = try world()
        defer { finish(harness) }
        let folder = try searchFolder(harness, "plan")
        let names = try harness.list(folder).map(\.name.description).filter { $0 != "." && $0 != ".." }
        #expect(Set(names) == ["a.txt", "b.txt"], "the text of both says 'plan'; Plans itself is a folder, not listed")
        let shown = try harness.lookup(folder, "a.txt").attributes.inode
        #expect(shown == (try harness.lookup(plans, "a.txt").attributes.inode), "the document itself, not a copy")
        #expect(try harness.readAll(shown) == Array("plan a".utf8))
        let answer = try results(harness, folder)
        #expect(answer.coverage == "server")
        #expect(Set(answer.hits.map(\.path)) == ["Harbour/Plans", "Harbour/Plans/a.txt", "Harbour/Plans/b.txt"])
        #expect(answer.hits.first { $0.path == "Harbour/Plans" }?.entry == nil, "a folder is in the results, not the folder")
    }

    @Test func anEditThroughTheSearchFolderChangesTheOneDocument() throws {
        let (harness, _, _) = try world()
        defer { finish(harness) }
        let folder = try searchFolder(harness, "notes")
        let inode = try harness.lookup(folder, "notes.txt").attributes.inode
        let handle = try harness.filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: harness.context).handle
        try harness.write(inode, handle: handle, Array("notes, edited".utf8))
        try harness.filesystem.flush(inode, handle: handle, context: harness.context)
        harness.filesystem.release(inode, handle: handle, flags: O_WRONLY)
        #expect(harness.filesystem.waitForUploads(timeout: .seconds(10)))
        let notes = try #require(harness.backend.state.withLock { $0.nodes.values.first { $0.item.name == "notes.txt" } })
        #expect(notes.content == Array("notes, edited".utf8))
        #expect(try harness.backend.versions(of: notes.item.identifier).count == 2, "a new version of that document")
    }

    @Test func twoMatchesOfOneNameAreToldApartByWhereTheyAre() throws {
        let (harness, _, _) = try world()
        defer { finish(harness) }
        let siteID = try #require(harness.backend.state.withLock { $0.nodes.values.first { $0.item.name == "Harbour" }?.item.identifier })
        let other = harness.backend.add("Other", in: siteID, kind: .folder)
        harness.backend.add("a.txt", in: other, kind: .file, content: Array("other a".utf8))
        let folder = try searchFolder(harness, "a.txt")
        let names = try harness.list(folder).map(\.name.description).filter { $0 != "." && $0 != ".." }
        #expect(Set(names) == ["a (Harbour › Plans).txt", "a (Harbour › Other).txt"])
        #expect(try harness.readAll(try harness.lookup(folder, "a (Harbour › Other).txt").attributes.inode) == Array("other a".utf8))
    }

    @Test func filtersInTheFolderNameNarrowTheSearch() throws {
        let (harness, _, _) = try world()
        defer { finish(harness) }
        let siteID = try #require(harness.backend.state.withLock { $0.nodes.values.first { $0.item.name == "Harbour" }?.item.identifier })
        harness.backend.add("plan.pdf", in: siteID, kind: .file, content: Array("pdf".utf8))
        let pdfs = try results(harness, try searchFolder(harness, "plan type:pdf"))
        #expect(pdfs.hits.map(\.path) == ["Harbour/plan.pdf"])
        let bySite = try results(harness, try searchFolder(harness, #"plan site:"Harbour" type:txt"#))
        #expect(Set(bySite.hits.map(\.path)) == ["Harbour/Plans/a.txt", "Harbour/Plans/b.txt"])
        let unknown = try results(harness, try searchFolder(harness, #"plan site:"Nowhere""#))
        #expect(unknown.error?.contains("no site named") == true)
        #expect(unknown.hits.isEmpty)
        let badDay = try results(harness, try searchFolder(harness, "plan since:yesterday"))
        #expect(badDay.error?.contains("since:") == true)
    }

    @Test func aServerThatDoesNotSearchIsSearchedByNameOverWhatWasListed() throws {
        let (harness, _, plans) = try world(searching: false)
        defer { finish(harness) }
        _ = try harness.list(plans)  // listed: its files are known
        let answer = try results(harness, try searchFolder(harness, "A.TXT"))
        #expect(answer.coverage == "listed_names")
        #expect(answer.note?.contains("does not search") == true)
        #expect(answer.hits.map(\.path) == ["Harbour/Plans/a.txt"])
    }

    @Test func theVirtualFoldersAreNotListedAndCannotBeChanged() throws {
        let (harness, _, _) = try world()
        defer { finish(harness) }
        let rootNames = try harness.list(.root).map(\.name.description)
        #expect(!rootNames.contains(".search") && !rootNames.contains(".versions"))
        let search = try harness.lookup(.root, ".search").attributes
        #expect(search.mode == 0o040555)
        let folder = try searchFolder(harness, "plan")
        #expect(throws: Errno.readOnlyFileSystem) {
            _ = try harness.filesystem.create(parent: folder, name: FileName("new.txt"), mode: 0o644, flags: O_WRONLY,
                                              context: harness.context)
        }
        #expect(throws: Errno.readOnlyFileSystem) { try harness.filesystem.unlink(parent: folder, name: FileName("a.txt"), context: harness.context) }
        #expect(throws: Errno.readOnlyFileSystem) {
            _ = try harness.filesystem.makeDirectory(parent: .root, name: FileName(".versions"), mode: 0o755, context: harness.context)
        }
        #expect(try harness.list(search.inode).map(\.name.description) == [".", ".."], "searches are looked up, never listed")
    }

    @Test func versionsAreListedReadAndRestored() throws {
        let (harness, _, plans) = try world()
        defer { finish(harness) }
        let a = try harness.lookup(plans, "a.txt").attributes.inode
        let identifier = try #require(harness.backend.state.withLock { $0.nodes.values.first { $0.item.name == "a.txt" }?.item.identifier })
        harness.backend.editOnServer(identifier, content: Array("plan a, second".utf8))
        harness.backend.editOnServer(identifier, content: Array("plan a, third!".utf8))
        harness.filesystem.pollChangeFeedOnce()

        let listed = try JSONDecoder().decode(Versions.self, from: Data(harness.xattr(a, "user.sitefs.control.versions").utf8))
        #expect(listed.versions.count == 3)
        #expect(listed.versions.map(\.current) == [true, false, false])
        #expect(try harness.xattr(a, "user.sitefs.version_count") == "3")

        // MOUNT/.versions/Harbour/Plans/a.txt/ holds one read-only file per version.
        var folder = try harness.lookup(.root, ".versions").attributes.inode
        for name in ["Harbour", "Plans", "a.txt"] { folder = try harness.lookup(folder, name).attributes.inode }
        let names = try harness.list(folder).map(\.name.description).filter { $0 != "." && $0 != ".." }
        #expect(names.count == 3)
        #expect(names.allSatisfy { $0.hasSuffix(".txt") })
        #expect(names.filter { $0.contains("(current)") }.count == 1)
        let oldest = try #require(names.first { !$0.contains("(current)") && $0 == names.last })
        let oldestEntry = try harness.lookup(folder, oldest).attributes
        #expect(oldestEntry.mode == 0o100444)
        #expect(try harness.readAll(oldestEntry.inode) == Array("plan a".utf8))
        #expect(throws: Errno.readOnlyFileSystem) {
            _ = try harness.filesystem.open(oldestEntry.inode, flags: O_RDWR, context: harness.context)
        }

        // Restoring the first version makes it the newest; the one it replaces stays a version.
        let first = try #require(listed.versions.last?.id)
        try harness.filesystem.setExtendedAttribute(a, name: "user.sitefs.control.restore", value: Array(first.utf8), flags: 0,
                                                    context: harness.context)
        #expect(try harness.readAll(a) == Array("plan a".utf8))
        #expect(try harness.backend.versions(of: identifier).count == 4, "nothing destroyed: one version more")
        #expect(try harness.xattr(a, "user.sitefs.version_count") == "4")
        #expect(throws: Errno.noSuchFileOrDirectory) {
            try harness.filesystem.setExtendedAttribute(a, name: "user.sitefs.control.restore", value: Array("no-such".utf8), flags: 0,
                                                        context: harness.context)
        }
    }

    @Test func restoreWaitsForNoSaveOfThisMount() throws {
        let (harness, _, plans) = try world()
        defer { finish(harness) }
        let a = try harness.lookup(plans, "a.txt").attributes.inode
        let first = try JSONDecoder().decode(Versions.self, from: Data(harness.xattr(a, "user.sitefs.control.versions").utf8))
        let handle = try harness.filesystem.open(a, flags: O_WRONLY, context: harness.context).handle
        try harness.write(a, handle: handle, Array("unsaved".utf8))
        #expect(throws: Errno.resourceBusy, "a restore would race the save being written") {
            try harness.filesystem.setExtendedAttribute(a, name: "user.sitefs.control.restore", value: Array(first.versions[0].id.utf8),
                                                        flags: 0, context: harness.context)
        }
        harness.filesystem.release(a, handle: handle, flags: O_WRONLY)
    }

    @Test func aServerWithoutVersionsSaysSo() throws {
        let (harness, _, plans) = try world()
        defer { finish(harness) }
        let a = try harness.lookup(plans, "a.txt").attributes.inode
        harness.backend.fail("versions", with: .refused(status: 501, code: "versions_unsupported", message: "no versions here"))
        let answer = try JSONDecoder().decode(Versions.self, from: Data(harness.xattr(a, "user.sitefs.control.versions").utf8))
        #expect(answer.error == "this server keeps no versions")
        #expect(throws: Errno.noData) { try harness.xattr(a, "user.sitefs.version_count") }
        var folder = try harness.lookup(.root, ".versions").attributes.inode
        for name in ["Harbour", "Plans", "a.txt"] { folder = try harness.lookup(folder, name).attributes.inode }
        #expect(throws: Errno.notSupported) { try harness.list(folder) }
    }
}
