import Foundation
import Logging
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Synchronization
import Testing

/// The servers the mode and link tests run against, by whether they keep dead properties:
/// Apache (mod_dav_fs keeps them beside each file), WsgiDAV with its property manager on,
/// WsgiDAV as it starts by default (no property manager: PROPPATCH refused) and nginx
/// (dav-ext has no PROPPATCH).
enum ModesAndLinksServer: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case apache, wsgidav, wsgidavWithoutProperties, nginx

    var testDescription: String { rawValue }

    /// Whether a mode set by one mount is seen by another.
    var keepsProperties: Bool { self == .apache || self == .wsgidav }

    static var keeping: [Self] { allCases.filter(\.keepsProperties) }
    static var notKeeping: [Self] { allCases.filter { !$0.keepsProperties } }

    func start(root: URL) throws -> (server: any WebDAVTestServer, authorization: String?) {
        switch self {
        case .apache: try LockingDAVServer.apache.start(root: root)
        case .nginx: try LockingDAVServer.nginx.start(root: root)
        case .wsgidav: (try WsgiDAVServer(root: root, propertyManager: true), nil)
        case .wsgidavWithoutProperties: (try WsgiDAVServer(root: root), nil)
        }
    }
}

/// A server over a fresh folder (`Harbour Tower/Plans/level1.txt`), and two mounts of it,
/// each with its own identity table and a log the test reads.
struct ModesAndLinksWorld {
    let kind: ModesAndLinksServer
    let server: any WebDAVTestServer
    let authorization: String?
    let laptop: WebDAVDocumentBackend
    let desktop: WebDAVDocumentBackend
    let laptopLog: LogRecorder

    static func with(_ kind: ModesAndLinksServer, _ body: (ModesAndLinksWorld) throws -> Void) throws {
        try servingHarbourTower("davmodes", start: { try kind.start(root: $0) }) { server, authorization, _, _ in
            let log = LogRecorder()
            let make = { (logger: Logger) throws -> WebDAVDocumentBackend in
                WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.collectionURL)), credentials: FixedAuthorization(authorization),
                                      identities: try IdentityTable(path: nil), logger: logger)
            }
            try body(ModesAndLinksWorld(kind: kind, server: server, authorization: authorization,
                                        laptop: try make(Logger(label: "laptop") { _ in log }),
                                        desktop: try make(Logger(label: "desktop")), laptopLog: log))
        }
    }

    /// The item at a path of shown names, as `backend` lists it; nil when not listed.
    func item(_ path: String, _ backend: WebDAVDocumentBackend) throws -> ProviderItem? {
        var folder: ProviderItem?
        for name in path.split(separator: "/").map(String.init) {
            let page = try folder.map { try backend.children(of: $0.identifier, after: nil, limit: 1000) } ?? backend.sites(after: nil, limit: 1000)
            guard let next = page.items.first(where: { $0.name == name }) else { return nil }
            folder = next
        }
        return folder
    }

    /// Every item of the folder at `path` named `name`, as `backend` lists it.
    func listed(_ name: String, in path: String, _ backend: WebDAVDocumentBackend) throws -> [ProviderItem] {
        let folder = try #require(try item(path, backend))
        return try backend.children(of: folder.identifier, after: nil, limit: 1000).items.filter { $0.name == name }
    }

    /// The whole content of an item.
    func content(_ item: ProviderItem, _ backend: WebDAVDocumentBackend) throws -> [UInt8] {
        let bytes = Mutex<[UInt8]>([])
        _ = try backend.fetchContent(of: item.identifier, version: nil, range: nil, ifNoneMatch: nil,
                                     into: .pieces(limit: 1 << 20) { piece in bytes.withLock { $0 += Array(piece) } },
                                     cancellation: .never)
        return bytes.withLock { $0 }
    }

    /// curl against the server, as another WebDAV client; its output and HTTP status.
    func curl(_ arguments: [String]) throws -> String {
        let user = authorization == nil ? [] : ["-u", "\(LockingDAVServer.credentials.user):\(LockingDAVServer.credentials.password)"]
        let outcome = try run(URL(fileURLWithPath: "/usr/bin/curl"),
                              ["-q", "-s", "--noproxy", "*", "--max-time", "20", "-w", "\n%{http_code}"] + user + arguments)
        guard outcome.status == 0 else { throw ProcessFailure("curl \(arguments): \(outcome.status) \(outcome.err)") }
        return outcome.out
    }

    /// Sets `urn:sitefs:NAME` on the resource at `path` (below the collection) to `value`,
    /// as text sent raw, the way a client other than sitefs might.
    func proppatch(_ path: String, _ name: String, _ value: String) throws -> String {
        let body = """
            <?xml version="1.0" encoding="utf-8"?><d:propertyupdate xmlns:d="DAV:" xmlns:s="urn:sitefs:">\
            <d:set><d:prop><s:\(name)>\(value)</s:\(name)></d:prop></d:set></d:propertyupdate>
            """
        return try curl(["-X", "PROPPATCH", "-H", "Content-Type: application/xml", "--data-binary", body, url(path)])
    }

    func url(_ path: String) -> String {
        server.collectionURL + path.split(separator: "/").map { $0.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)! }
            .joined(separator: "/")
    }
}
