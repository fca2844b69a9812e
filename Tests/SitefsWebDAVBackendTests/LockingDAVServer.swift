import Foundation
import Logging
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// The WebDAV servers the lock tests run against, each serving a folder of the test's with
/// locks on: Apache (DavLockDB, behind Basic authentication), WsgiDAV, and nginx (dav-ext
/// with a lock zone unless a test asks for none).
enum LockingDAVServer: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case apache, wsgidav, nginx

    var testDescription: String { rawValue }

    /// nginx keeps no owner: its locks show no holder, device or program.
    var keepsOwner: Bool { self != .nginx }

    /// Apache's account (the others ask for none).
    static let credentials = BasicCredentials(user: "anna", password: "harbour-7")

    /// Starts the server over `root`, with the `Authorization` a client of it sends.
    func start(root: URL, nginxLocks: Bool = true) throws -> (server: any WebDAVTestServer, authorization: String?) {
        switch self {
        case .apache:
            let credentials = Self.credentials
            return (try ApacheDAVServer(root: root, credentials: credentials),
                    "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString())
        case .nginx:
            return (try NginxDAVServer(root: root, locks: nginxLocks), nil)
        case .wsgidav:
            return (try WsgiDAVServer(root: root), nil)
        }
    }

    /// A backend of its own (one mount) at `url`, with an identity table in memory.
    static func backend(_ url: String, authorization: String?) throws -> WebDAVDocumentBackend {
        WebDAVDocumentBackend(location: try #require(WebDAVLocation(url)), credentials: FixedAuthorization(authorization),
                              identities: try IdentityTable(path: nil), logger: Logger(label: "test"))
    }
}

/// Serves a scratch folder whose tree is the site "Harbour Tower" with `Plans/level1.txt`
/// ("level 1\n"), on the server `start` starts over the tree's root, while `body` runs; the
/// server stops and the folder goes however `body` ends. `body` gets the server, the
/// `Authorization` its clients send, the tree's root and the scratch folder holding it.
func servingHarbourTower(_ label: String, start: (_ root: URL) throws -> (server: any WebDAVTestServer, authorization: String?),
                         _ body: (_ server: any WebDAVTestServer, _ authorization: String?, _ root: URL, _ scratch: URL) throws -> Void)
    throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-\(label)-\(UUID().uuidString)")
    let root = directory.appendingPathComponent("root")
    try FileManager.default.createDirectory(at: root.appendingPathComponent("Harbour Tower/Plans"), withIntermediateDirectories: true)
    try Data("level 1\n".utf8).write(to: root.appendingPathComponent("Harbour Tower/Plans/level1.txt"))
    defer { try? FileManager.default.removeItem(at: directory) }
    let (server, authorization) = try start(root)
    defer { server.stop() }
    try body(server, authorization, root, directory)
}
