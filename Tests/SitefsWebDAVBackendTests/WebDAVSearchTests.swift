import Foundation
import Logging
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Synchronization
import Testing

/// Whether WebDAV servers search (RFC 5323) and keep versions, asked of the real ones: none
/// of WsgiDAV, Apache mod_dav_fs and nginx dav-ext announces `DASL` or answers `SEARCH`,
/// so the backend says the server does not search (and why), and refuses versions with a
/// message a person understands. A server that announces DASL is named as such.
@Suite struct WebDAVSearchTests {
    static let servers: [ModesAndLinksServer] = [.apache, .wsgidavWithoutProperties, .nginx]

    /// `SEARCH` with a basicsearch for names containing "level" below the collection.
    static func basicsearch(scope: String) -> String {
        """
        <?xml version="1.0" encoding="utf-8"?><d:searchrequest xmlns:d="DAV:"><d:basicsearch>\
        <d:select><d:prop><d:displayname/></d:prop></d:select>\
        <d:from><d:scope><d:href>\(scope)</d:href><d:depth>infinity</d:depth></d:scope></d:from>\
        <d:where><d:like><d:prop><d:displayname/></d:prop><d:literal>%level%</d:literal></d:like></d:where>\
        </d:basicsearch></d:searchrequest>
        """
    }

    @Test(arguments: servers)
    func theServersTestedNeitherSearchNorKeepVersions(_ kind: ModesAndLinksServer) throws {
        try ModesAndLinksWorld.with(kind) { world in
            let options = try world.curl(["-i", "-X", "OPTIONS", world.server.collectionURL]).lowercased()
            #expect(options.hasSuffix("\n200") || options.hasSuffix("\n204"), "\(options)")
            #expect(!options.contains("\ndasl:"), "\(options)")
            let search = try world.curl(["-X", "SEARCH", "-H", "Content-Type: text/xml",
                                         "--data-binary", Self.basicsearch(scope: world.server.collectionPath), world.server.collectionURL])
            #expect(search.hasSuffix("\n405"), "SEARCH answered \(search.suffix(300))")

            guard case .unsupported(let reason) = world.laptop.searchSupport else {
                Issue.record("\(kind) is said to search")
                return
            }
            #expect(reason == "this WebDAV server does not search (its OPTIONS answer announces no DASL search grammar)")
            #expect { try world.laptop.search(SearchQuery(words: "level"), after: nil, limit: 10) } throws: { error in
                guard case .refused(501, "search_unsupported", _) = error as? ProviderError else { return false }
                return true
            }

            let file = try #require(try world.item("Harbour Tower/Plans/level1.txt", world.laptop))
            for attempt in [{ _ = try world.laptop.versions(of: file.identifier) },
                            { _ = try world.laptop.restore(file.identifier, version: file.version, baseVersion: file.version) }] {
                #expect(throws: ProviderError.self) { try attempt() }
                do {
                    try attempt()
                } catch let ProviderError.refused(status, code, message) {
                    #expect(status == 501 && code == "versions_unsupported")
                    #expect(message.hasPrefix("this WebDAV server keeps no versions"))
                } catch {
                    Issue.record("\(error)")
                }
            }
        }
    }

    /// A server whose OPTIONS announces a search grammar (as Nextcloud's does) is told apart:
    /// the reason names the grammar and says sitefs does not use it; asked once.
    @Test func aServerThatAnnouncesDASLIsNamedAsSuch() throws {
        let optionsAsked = OptionsCount()
        let server = try TestServer { request, connection in
            guard connection.readWholeBody(of: request) != nil else { return false }
            if request.method == "OPTIONS" { optionsAsked.count.withLock { $0 += 1 } }
            return connection.send(Array(
                "HTTP/1.1 200 OK\r\nDAV: 1, 3\r\nDASL: <DAV:basicsearch>\r\nAllow: OPTIONS, PROPFIND, SEARCH\r\nContent-Length: 0\r\n\r\n".utf8))
        }
        defer { _ = server.stop() }
        let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")), credentials: FixedAuthorization(nil),
                                            identities: try IdentityTable(path: nil), logger: Logger(label: "test"))
        let expected = SearchSupport.unsupported(
            reason: #"this WebDAV server announces WebDAV SEARCH (DASL "<DAV:basicsearch>"), which sitefs does not use yet"#)
        #expect(backend.searchSupport == expected)
        #expect(backend.searchSupport == expected)
        #expect(optionsAsked.count.withLock { $0 } == 1, "asked once per mount")
    }
}

/// How many OPTIONS requests a test server saw.
private final class OptionsCount: Sendable {
    let count = Mutex(0)
}
