import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// A new file's version where the server answers its PUT without an ETag (Apache): made
/// here, no PROPFIND asked (see `UploadTag`), and from then on the same version wherever
/// the file is seen, sent as the server's tag, and given up for a change made elsewhere.
/// Run against every WebDAV server: what a user sees must not depend on which it is.
@Suite struct UploadTagTests {
    private struct World {
        let server: any WebDAVTestServer
        let authorization: String?
        let root: URL
        let scratch: URL
        let tablePath: String
        let table: IdentityTable
        let backend: WebDAVDocumentBackend
        let folder: ItemIdentifier

        /// Another mount of the same table (a remount).
        func remounted() throws -> WebDAVDocumentBackend {
            WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.collectionURL)), credentials: FixedAuthorization(authorization),
                                  identities: try IdentityTable(path: tablePath), logger: Logger(label: "test"))
        }

        func upload(_ text: String) throws -> String {
            let file = scratch.appendingPathComponent("upload-\(UUID().uuidString)")
            try Data(text.utf8).write(to: file)
            return file.path
        }

        func listed(_ name: String, by backend: WebDAVDocumentBackend? = nil) throws -> ProviderItem {
            let page = try (backend ?? self.backend).children(of: folder, after: nil, limit: 1000)
            return try #require(page.items.first { $0.name == name })
        }
    }

    private func withServer(_ kind: LockingDAVServer, _ body: (World) throws -> Void) throws {
        try servingHarbourTower("puttag", start: { try kind.start(root: $0) }) { server, authorization, root, scratch in
            let tablePath = scratch.appendingPathComponent("identities.sqlite").path
            let table = try IdentityTable(path: tablePath)
            let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.collectionURL)),
                                                credentials: FixedAuthorization(authorization),
                                                identities: table, logger: Logger(label: "test"))
            let site = try #require(try backend.sites(after: nil, limit: 10).items.first { $0.name == "Harbour Tower" })
            let plans = try #require(try backend.children(of: site.identifier, after: nil, limit: 10).items.first { $0.name == "Plans" })
            // A listing that shows a file: the backend now knows whether the server tags files.
            _ = try backend.children(of: plans.identifier, after: nil, limit: 10)
            try body(World(server: server, authorization: authorization, root: root, scratch: scratch, tablePath: tablePath,
                           table: table, backend: backend, folder: plans.identifier))
        }
    }

    /// The number of a file just created is not fsynced with its PUT's answer (Apache's,
    /// made here): it waits until something asks for it by name, and a remount still finds
    /// the file, under the same number (the commit is in the WAL).
    @Test func aNewFilesNumberWaitsForTheDiskUntilSomethingNamesIt() throws {
        try withServer(.apache) { world in
            let created = try world.backend.createFile(named: "waits.txt", in: world.folder, contentsOf: try world.upload("w\n"))
            let node = try #require(IdentityTable.Node(created.identifier.id))
            #expect(world.table.nodesWaitingForTheDisk == [node])
            // Another item named: nothing to flush.
            try world.backend.makeDurable([world.folder])
            #expect(world.table.nodesWaitingForTheDisk == [node])
            #expect(try world.listed("waits.txt", by: try world.remounted()).identifier == created.identifier)
            try world.backend.makeDurable([world.folder, created.identifier])
            #expect(world.table.nodesWaitingForTheDisk.isEmpty)
        }
    }

    @Test(arguments: LockingDAVServer.allCases)
    func aNewFileKeepsItsVersionThroughListingsReadsAndSaves(_ kind: LockingDAVServer) throws {
        try withServer(kind) { world in
            let created = try world.backend.createFile(named: "new.txt", in: world.folder, contentsOf: try world.upload("new\n"))
            #expect(created.size == 4 && created.kind == .file && created.parent == world.folder)
            if kind == .apache {
                // Apache answers a PUT without a tag: the version is the mount's own.
                #expect(created.version.hasPrefix("put:"))
            }
            // Listed, asked for, read, listed by a remount: the same version every time.
            #expect(try world.listed("new.txt").version == created.version)
            #expect(try world.backend.item(created.identifier).version == created.version)
            let collected = CollectedBytes()
            let fetched = try world.backend.fetchContent(of: created.identifier, version: created.version, range: nil,
                                                         ifNoneMatch: nil, into: .pieces(limit: 100) { collected.append($0) })
            #expect(String(decoding: collected.bytes, as: UTF8.self) == "new\n")
            guard case .fetched(let version, _) = fetched else { Issue.record("not fetched: \(fetched)"); return }
            #expect(version == created.version)
            let unchanged = try world.backend.fetchContent(of: created.identifier, version: nil, range: nil,
                                                           ifNoneMatch: created.version, into: .pieces(limit: 100) { _ in })
            guard case .notModified = unchanged else { Issue.record("expected 304, got \(unchanged)"); return }
            #expect(try world.listed("new.txt", by: try world.remounted()).version == created.version)
            // A save on top of it is conditional on it, and goes through.
            let saved = try world.backend.modifyContent(of: created.identifier, baseVersion: created.version,
                                                        contentsOf: try world.upload("new, saved again\n"))
            #expect(saved.version != created.version && saved.size == 17)
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Plans/new.txt"), encoding: .utf8)
                    == "new, saved again\n")
            #expect(try world.listed("new.txt").version == saved.version)
        }
    }

    /// Another client's change after the create, before any sighting here: the listing shows
    /// the server's version, and a save based on the created one is refused, leaving theirs.
    @Test(arguments: LockingDAVServer.allCases)
    func aChangeMadeElsewhereIsNotTakenForTheUpload(_ kind: LockingDAVServer) throws {
        try withServer(kind) { world in
            let created = try world.backend.createFile(named: "shared.txt", in: world.folder, contentsOf: try world.upload("mine\n"))
            try world.server.writeFile("Harbour Tower/Plans/shared.txt", "someone else's longer text\n")
            let listed = try world.listed("shared.txt")
            #expect(listed.version != created.version && listed.size == 27)
            #expect {
                _ = try world.backend.modifyContent(of: created.identifier, baseVersion: created.version,
                                                    contentsOf: try world.upload("mine, saved again\n"))
            } throws: { error in
                if case .versionMismatch(let current) = error as? ProviderError { return current?.version == listed.version }
                return false
            }
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Plans/shared.txt"), encoding: .utf8)
                    == "someone else's longer text\n")
        }
    }

    /// The same change where nothing here saw the file in between: the save's own check
    /// (a PROPFIND) finds the content is not the upload's and refuses.
    @Test(arguments: LockingDAVServer.allCases)
    func aSaveOnAnUploadNobodySawChecksItFirst(_ kind: LockingDAVServer) throws {
        try withServer(kind) { world in
            let created = try world.backend.createFile(named: "unseen.txt", in: world.folder, contentsOf: try world.upload("mine\n"))
            try world.server.writeFile("Harbour Tower/Plans/unseen.txt", "theirs, not the same size\n")
            #expect {
                _ = try world.backend.modifyContent(of: created.identifier, baseVersion: created.version,
                                                    contentsOf: try world.upload("mine, saved again\n"))
            } throws: { error in
                if case .versionMismatch = error as? ProviderError { return true }
                return false
            }
            #expect {
                _ = try world.backend.fetchContent(of: created.identifier, version: created.version, range: nil, ifNoneMatch: nil,
                                                   into: .pieces(limit: 100) { _ in })
            } throws: { error in
                if case .versionMismatch = error as? ProviderError { return true }
                return false
            }
            #expect(try String(contentsOf: world.root.appendingPathComponent("Harbour Tower/Plans/unseen.txt"), encoding: .utf8)
                    == "theirs, not the same size\n")
        }
    }
}
