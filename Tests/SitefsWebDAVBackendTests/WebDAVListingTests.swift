import Foundation
import SitefsHTTP
import SitefsTestSupport
import SitefsWebDAV
import SitefsWebDAVBackend
import Testing

/// Listings against a real WebDAV server (WsgiDAV), checked against its disk.
@Suite struct WebDAVListingTests {
    private func withServer(_ body: (WsgiDAVServer, URL) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-dav-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try WsgiDAVServer(root: root)
        defer { server.stop() }
        try body(server, root)
    }

    private func listing(_ server: WsgiDAVServer, limits: MultistatusParser.Limits = .init()) -> WebDAVListing {
        WebDAVListing(client: HTTPClient(baseURL: server.baseURL), basePath: "/", origin: server.baseURL, limits: limits)
    }

    private func children(_ listing: WebDAVListing, _ path: [String]) throws -> (own: WebDAVEntry?, [WebDAVEntry]) {
        var entries: [WebDAVEntry] = []
        let own = try listing.children(of: path) { entries.append($0) }
        return (own, entries.sorted { $0.name < $1.name })
    }

    @Test func theRootListsItsCollectionsAndFiles() throws {
        try withServer { server, root in
            try FileManager.default.createDirectory(at: root.appendingPathComponent("Harbour Tower"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: root.appendingPathComponent("Riverside Schüle"), withIntermediateDirectories: true)
            try Data("read me\n".utf8).write(to: root.appendingPathComponent("readme.txt"))
            let (own, entries) = try children(listing(server), [])
            #expect(own?.properties.isCollection == true)
            #expect(entries.map(\.name) == ["Harbour Tower", "Riverside Schüle", "readme.txt"])
            #expect(entries.map(\.properties.isCollection) == [true, true, false])
            let file = entries[2].properties
            #expect(file.contentLength == "8" && file.etag != nil)
            #expect(file.lastModified.flatMap(HTTPDate.secondsSinceEpoch) != nil)
        }
    }

    @Test func aLargeCollectionListsEveryFile() throws {
        try withServer { server, root in
            let folder = root.appendingPathComponent("big")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for index in 0..<1000 {
                _ = FileManager.default.createFile(atPath: folder.appendingPathComponent(String(format: "f%04d.txt", index)).path, contents: nil)
            }
            let (own, entries) = try children(listing(server), ["big"])
            #expect(own?.name == "big")
            #expect(entries.count == 1000)
            #expect(entries.first?.name == "f0000.txt" && entries.last?.name == "f0999.txt")
            #expect(entries.allSatisfy { $0.components.count == 2 && $0.properties.contentLength == "0" })
        }
    }

    @Test func aMissingCollectionIsA404() throws {
        try withServer { server, _ in
            #expect {
                try children(listing(server), ["nowhere"])
            } throws: { error in
                if case .status(404, _) = error as? WebDAVListingError { return true }
                return false
            }
        }
    }

    @Test func aListingOverTheResponseLimitIsRefused() throws {
        try withServer { server, root in
            for index in 0..<5 {
                _ = FileManager.default.createFile(atPath: root.appendingPathComponent("f\(index)").path, contents: nil)
            }
            #expect {
                try children(listing(server, limits: .init(responses: 3)), [])
            } throws: { error in
                if case .body(.tooManyResponses) = error as? WebDAVListingError { return true }
                return false
            }
        }
    }
}
