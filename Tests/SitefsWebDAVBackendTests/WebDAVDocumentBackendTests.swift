import Foundation
import Logging
import SitefsAPI
import SitefsHTTP
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// The WebDAV backend against a real server (WsgiDAV), checked on the server's disk.
@Suite struct WebDAVDocumentBackendTests {
    private struct World {
        let server: WsgiDAVServer
        let root: URL
        let scratch: URL
        let backend: WebDAVDocumentBackend
    }

    private func withServer(_ body: (World) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-davb-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Harbour Tower/Plans"), withIntermediateDirectories: true)
        try Data("level 1\n".utf8).write(to: root.appendingPathComponent("Harbour Tower/Plans/level1.txt"))
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try WsgiDAVServer(root: root)
        defer { server.stop() }
        let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")), credentials: FixedAuthorization(nil),
                                            identities: try IdentityTable(path: nil), logger: Logger(label: "test"))
        try body(World(server: server, root: root, scratch: directory, backend: backend))
    }

    private func all(_ backend: WebDAVDocumentBackend, in folder: ItemIdentifier?, limit: Int = 100) throws -> [ProviderItem] {
        var items: [ProviderItem] = []
        var token: PageToken?
        var pages = 0
        repeat {
            let page = try folder.map { try backend.children(of: $0, after: token, limit: limit) } ?? backend.sites(after: token, limit: limit)
            items += page.items
            token = page.next
            pages += 1
        } while token != nil && pages < 10_000
        return items
    }

    private func child(_ name: String, of folder: ItemIdentifier?, _ backend: WebDAVDocumentBackend) throws -> ProviderItem {
        try #require(try all(backend, in: folder).first { $0.name == name })
    }

    private func localFile(_ world: World, _ text: String) throws -> String {
        let file = world.scratch.appendingPathComponent("upload-\(UUID().uuidString)")
        try Data(text.utf8).write(to: file)
        return file.path
    }

    @Test func sitesAreTheCollectionsAtTheTopAndFilesThereAreEditableButStayPut() throws {
        try withServer { world in
            try Data("x".utf8).write(to: world.root.appendingPathComponent("loose.txt"))
            let page = try world.backend.sites(after: nil, limit: 10)
            #expect(page.items.map(\.name).sorted() == ["Harbour Tower", "loose.txt"])
            let site = try #require(page.items.first { $0.name == "Harbour Tower" })
            #expect(site.kind == .site && site.identifier.isSite && site.parent == nil)
            let loose = try #require(page.items.first { $0.name == "loose.txt" })
            #expect(loose.kind == .file && loose.parent == nil && loose.size == 1)
            #expect(loose.capabilities == [.read, .write])
            let saved = try world.backend.modifyContent(of: loose.identifier, baseVersion: loose.version,
                                                        contentsOf: try localFile(world, "edited\n"))
            #expect(saved.identifier == loose.identifier && saved.size == 7)
            #expect(throws: ProviderError.self) {
                _ = try world.backend.update(loose.identifier, ItemChanges(name: "renamed.txt"), baseVersion: nil)
            }
        }
    }

    @Test func aLargeFolderComesInPagesWithStableIdentities() throws {
        try withServer { world in
            let folder = world.root.appendingPathComponent("Harbour Tower/Big")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for index in 0..<1000 {
                _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(String(format: "f%04d.txt", index)).path,
                                                   contents: Data("\(index)".utf8))
            }
            let site = try child("Harbour Tower", of: nil, world.backend)
            let big = try child("Big", of: site.identifier, world.backend)
            var pages = 0
            var token: PageToken?
            var items: [ProviderItem] = []
            repeat {
                let page = try world.backend.children(of: big.identifier, after: token, limit: 64)
                #expect(page.items.count <= 64)
                items += page.items
                token = page.next
                pages += 1
            } while token != nil
            #expect(items.count == 1000 && pages >= 16)
            #expect(Set(items.map(\.name)).count == 1000 && items.allSatisfy { $0.parent == big.identifier && $0.kind == .file })
            let again = try all(world.backend, in: big.identifier, limit: 500)
            #expect(Dictionary(uniqueKeysWithValues: again.map { ($0.name, $0.identifier) })
                    == Dictionary(uniqueKeysWithValues: items.map { ($0.name, $0.identifier) }))
        }
    }

    @Test func aTokenWhoseListingIsGoneListsAgainFromItsPosition() throws {
        try withServer { world in
            let site = try child("Harbour Tower", of: nil, world.backend)
            for name in ["a", "b", "c", "d"] {
                try Data(name.utf8).write(to: world.root.appendingPathComponent("Harbour Tower/\(name).txt"))
            }
            let first = try world.backend.children(of: site.identifier, after: nil, limit: 2)
            let token = try #require(first.next)
            // The same token twice (a retry) gives the same page.
            let second = try world.backend.children(of: site.identifier, after: token, limit: 2)
            let retried = try world.backend.children(of: site.identifier, after: token, limit: 2)
            #expect(second.items.map(\.name) == retried.items.map(\.name))
            // A token of a listing this backend no longer has (as after its end).
            let parts = token.rawValue.split(separator: ".")
            let stale = PageToken("s999999.\(parts[1])")
            let restarted = try world.backend.children(of: site.identifier, after: stale, limit: 10)
            #expect(restarted.items.count == 5 - 2)  // Plans and four files, two of them served already
        }
    }

    @Test func contentDownloadsWholeRangedAndConditionally() throws {
        try withServer { world in
            let site = try child("Harbour Tower", of: nil, world.backend)
            let plans = try child("Plans", of: site.identifier, world.backend)
            let file = try child("level1.txt", of: plans.identifier, world.backend)
            #expect(file.size == 8)
            var received: [UInt8] = []
            let collected = CollectedBytes()
            let outcome = try world.backend.fetchContent(
                of: file.identifier, version: nil, range: 2...4, ifNoneMatch: nil,
                into: .pieces(limit: 3) { collected.append($0) })
            received = collected.bytes
            #expect(String(decoding: received, as: UTF8.self) == "vel")
            guard case .fetched(let version, let total) = outcome else { Issue.record("not fetched"); return }
            #expect(total == 8 && version == file.version)
            let again = try world.backend.fetchContent(of: file.identifier, version: nil, range: nil, ifNoneMatch: version,
                                                       into: .pieces(limit: 100) { _ in })
            guard case .notModified = again else { Issue.record("expected 304, got \(again)"); return }
        }
    }

    @Test func aSaveIsConditionalOnItsBaseVersion() throws {
        try withServer { world in
            let site = try child("Harbour Tower", of: nil, world.backend)
            let plans = try child("Plans", of: site.identifier, world.backend)
            let file = try child("level1.txt", of: plans.identifier, world.backend)
            let saved = try world.backend.modifyContent(of: file.identifier, baseVersion: file.version,
                                                        contentsOf: try localFile(world, "level 1, revised\n"))
            #expect(saved.identifier == file.identifier && saved.size == 17 && saved.version != file.version)
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Plans/level1.txt"), encoding: .utf8)
                    == "level 1, revised\n")
            // Based on the old version: refused, and nothing on the server changes.
            #expect {
                _ = try world.backend.modifyContent(of: file.identifier, baseVersion: file.version,
                                                    contentsOf: try localFile(world, "stale\n"))
            } throws: { error in
                if case .versionMismatch(let current) = error as? ProviderError { return current?.version == saved.version }
                return false
            }
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Plans/level1.txt"), encoding: .utf8)
                    == "level 1, revised\n")
        }
    }

    @Test func createRenameReplaceAndDeleteKeepIdentities() throws {
        try withServer { world in
            let site = try child("Harbour Tower", of: nil, world.backend)
            let plans = try child("Plans", of: site.identifier, world.backend)
            let created = try world.backend.createFile(named: "new é.txt", in: plans.identifier, contentsOf: try localFile(world, "new\n"))
            #expect(created.parent == plans.identifier && created.name == "new é.txt")
            #expect(FileManager.default.fileExists(atPath: world.root.appendingPathComponent("Harbour Tower/Plans/new é.txt").path))
            #expect {
                _ = try world.backend.createFile(named: "new é.txt", in: plans.identifier, contentsOf: try localFile(world, "again\n"))
            } throws: { error in
                if case .nameTaken = error as? ProviderError { return true }
                return false
            }
            let folder = try world.backend.createFolder(named: "Sections", in: site.identifier)
            #expect(folder.kind == .folder)
            let moved = try world.backend.update(created.identifier, ItemChanges(name: "moved.txt", parent: folder.identifier),
                                                 baseVersion: nil)
            #expect(moved.identifier == created.identifier && moved.parent == folder.identifier)
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Sections/moved.txt"), encoding: .utf8) == "new\n")
            // Renaming a folder keeps what is inside reachable under the same identity.
            let renamedFolder = try world.backend.update(folder.identifier, ItemChanges(name: "Parts"), baseVersion: nil)
            #expect(renamedFolder.identifier == folder.identifier)
            #expect(try world.backend.item(created.identifier).name == "moved.txt")
            // Rename over: the replaced document's identity survives, with the new content.
            let level1 = try child("level1.txt", of: plans.identifier, world.backend)
            let temp = try world.backend.createFile(named: ".level1.tmp", in: plans.identifier, contentsOf: try localFile(world, "saved by rename\n"))
            let replaced = try world.backend.update(temp.identifier, ItemChanges(name: "level1.txt", replaceExisting: true), baseVersion: nil)
            #expect(replaced.identifier == level1.identifier && replaced.size == 16)
            #expect(throws: ProviderError.self) { _ = try world.backend.item(temp.identifier) }
            try world.backend.delete(level1.identifier, baseVersion: nil)
            #expect(!FileManager.default.fileExists(atPath: world.root.appendingPathComponent("Harbour Tower/Plans/level1.txt").path))
            #expect { _ = try world.backend.item(level1.identifier) } throws: { ($0 as? ProviderError)?.isNotFound == true }
        }
    }

    @Test func aModificationTimeTheServerCannotStoreIsKeptForThatVersion() throws {
        try withServer { world in
            let site = try child("Harbour Tower", of: nil, world.backend)
            let plans = try child("Plans", of: site.identifier, world.backend)
            let file = try child("level1.txt", of: plans.identifier, world.backend)
            let past = Timestamp(microsecondsSinceEpoch: 1_500_000_000_000_000)
            let updated = try world.backend.update(file.identifier, ItemChanges(modified: past), baseVersion: nil)
            #expect(updated.modified == past)
            #expect(try world.backend.item(file.identifier).modified == past)
            #expect(try child("level1.txt", of: plans.identifier, world.backend).modified == past)
            // A new version on the server: its own time again.
            try Data("changed on the server\n".utf8).write(to: world.root.appendingPathComponent("Harbour Tower/Plans/level1.txt"))
            #expect(try world.backend.item(file.identifier).modified != past)
        }
    }
}

/// Bytes collected from a pieces sink's callback (which must be Sendable).
final class CollectedBytes: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [UInt8] = []
    func append(_ piece: UnsafeRawBufferPointer) {
        lock.lock()
        collected += piece
        lock.unlock()
    }
    var bytes: [UInt8] {
        lock.lock()
        defer { lock.unlock() }
        return collected
    }
}
