import Foundation
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// nginx's WebDAV module lists no dot-files, though it serves them: a `.git` this mount made
/// must stay listed and keep its identity through a listing that leaves it out (a prune took
/// it and everything below, and git's next files were rescued beside the repository).
@Suite struct DotFileListingTests {
    @Test(arguments: LockingDAVServer.allCases)
    func aDotFolderMadeHereOutlivesAListingThatLeavesItOut(_ kind: LockingDAVServer) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-davdot-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Harbour Tower"), withIntermediateDirectories: true)
        defer {
            do { try FileManager.default.removeItem(at: directory) } catch { Issue.record("scratch not removed: \(error)") }
        }
        let (server, authorization) = try kind.start(root: root)
        defer { server.stop() }
        let backend = try LockingDAVServer.backend(server.collectionURL, authorization: authorization)
        let site = try #require(try backend.sites(after: nil, limit: 10).items.first { $0.name == "Harbour Tower" })
        let repo = try backend.createFolder(named: "repo", in: site.identifier)
        let git = try backend.createFolder(named: ".git", in: repo.identifier)
        let objects = try backend.createFolder(named: "objects", in: git.identifier)
        let file = directory.appendingPathComponent("HEAD")
        try Data("ref: refs/heads/master\n".utf8).write(to: file)
        _ = try backend.createFile(named: "README.md", in: repo.identifier, contentsOf: file.path)

        let listed = try backend.children(of: repo.identifier, after: nil, limit: 100).items
        #expect(Set(listed.map(\.name)) == [".git", "README.md"])
        #expect(listed.first { $0.name == ".git" }?.identifier == git.identifier)
        // What is below it still resolves: a file saved there lands there.
        let head = try backend.createFile(named: "HEAD", in: git.identifier, contentsOf: file.path)
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("Harbour Tower/repo/.git/HEAD").path))
        #expect(try backend.children(of: objects.identifier, after: nil, limit: 10).items.isEmpty)
        #expect(try backend.item(head.identifier).name == "HEAD")
        // One deleted behind the mount's back goes at the next listing.
        try FileManager.default.removeItem(at: root.appendingPathComponent("Harbour Tower/repo/.git"))
        #expect(try backend.children(of: repo.identifier, after: nil, limit: 100).items.map(\.name) == ["README.md"])
    }
}
