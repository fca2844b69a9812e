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
