import Foundation
import Logging
import SitefsAPI
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// Locks a server describes as no honest one would: a lock that cannot be one is not shown,
/// a holder's text is cleaned and bounded, and the listing never fails for any of it.
@Suite struct HostileLockTests {
    private static func lock(token: String = "opaquelocktoken:1", timeout: String = "Second-60", owner: String = "Ben") -> String {
        "<d:lockdiscovery><d:activelock><d:locktype><d:write/></d:locktype><d:lockscope><d:exclusive/></d:lockscope>"
            + "<d:depth>0</d:depth><d:owner xmlns:s=\"urn:sitefs:lock\">\(owner)</d:owner><d:timeout>\(timeout)</d:timeout>"
            + "<d:locktoken><d:href>\(token)</d:href></d:locktoken></d:activelock></d:lockdiscovery>"
    }

    private static let files: [(name: String, lock: String)] = [
        ("free.txt", "<d:lockdiscovery/>"),
        ("plain.txt", lock()),
        ("garbage-timeout.txt", lock(timeout: "Second-soon")),
        ("endless-timeout.txt", lock(timeout: "Second-99999999999")),
        ("infinite.txt", lock(timeout: "Infinite")),
        ("bad-token.txt", lock(token: "a token with spaces")),
        ("loud-owner.txt", lock(owner: "Ben\u{85}\t" + String(repeating: "ß", count: 300))),
        ("future.txt", lock(owner: "Ben<s:name>Ben B.</s:name><s:since>2999-01-01T00:00:00Z</s:since>")),
        ("claims.txt", lock(owner: "Ben<s:name>Ben B.</s:name><s:device>tablet</s:device><s:since>2026-11-01T09:00:00Z</s:since>")),
    ]

    @Sendable private static func routes(_ request: TestRequest, _ connection: TestConnection) -> Bool {
        guard connection.readWholeBody(of: request) != nil else { return false }
        guard request.method == "PROPFIND", request.path == "/" || request.path == "/Site/" else {
            return connection.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
        }
        let folder = "<d:resourcetype><d:collection/></d:resourcetype><d:lockdiscovery/>"
        let entries = request.path == "/" ? [("/", folder), ("/Site/", folder)]
            : [("/Site/", folder)] + files.map { ("/Site/\($0.name)", "<d:resourcetype/><d:getcontentlength>1</d:getcontentlength>"
                                                    + "<d:getetag>\"e\"</d:getetag>" + $0.lock) }
        let body = #"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">"# + entries.map { href, props in
            "<d:response><d:href>\(href)</d:href><d:propstat><d:prop>\(props)</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
        }.joined() + "</d:multistatus>"
        let bytes = Array(body.utf8)
        return connection.send(Array("HTTP/1.1 207 Multi-Status\r\nContent-Type: application/xml\r\nContent-Length: \(bytes.count)\r\n\r\n".utf8) + bytes)
    }

    @Test func locksThatCannotBeAreNotShownAndHoldersAreCleaned() throws {
        let server = try TestServer(routes: Self.routes)
        defer { _ = server.stop() }
        let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")), credentials: FixedAuthorization(nil),
                                            identities: try IdentityTable(path: nil), logger: Logger(label: "test"))
        let site = try #require(try backend.sites(after: nil, limit: 10).items.first)
        let before = Timestamp.now()
        let page = try backend.children(of: site.identifier, after: nil, limit: 100)
        let after = Timestamp.now()
        #expect(page.items.count == Self.files.count && page.refused.isEmpty)
        let locks = Dictionary(uniqueKeysWithValues: page.items.map { ($0.name, $0.lock) })
        #expect(locks["free.txt"]! == nil && locks["garbage-timeout.txt"]! == nil && locks["endless-timeout.txt"]! == nil)
        #expect(locks["bad-token.txt"]! == nil)
        let plain = try #require(locks["plain.txt"]!)
        #expect(plain.holder == "Ben" && plain.holderName == "Ben" && !plain.heldHere && plain.device.isEmpty)
        #expect(plain.since >= before && plain.since <= after)  // not said: first seen here
        let expires = try #require(plain.expires)
        #expect(expires.microseconds >= before.microseconds + 60_000_000 && expires.microseconds <= after.microseconds + 60_000_000)
        #expect(try #require(locks["infinite.txt"]!).expires == nil)
        let loud = try #require(locks["loud-owner.txt"]!)
        #expect(loud.holder.utf8.count <= 200 && loud.holder.hasPrefix("Ben") && !loud.holder.unicodeScalars.contains { $0.value == 0x85 || $0 == "\t" })
        let future = try #require(locks["future.txt"]!)
        #expect(future.holderName == "Ben B." && future.since <= after)
        let claims = try #require(locks["claims.txt"]!)
        #expect(claims.holderName == "Ben B." && claims.holder == "Ben B." && claims.device == "tablet")
        #expect(claims.since == Timestamp(rfc3339: "2026-11-01T09:00:00Z"))
        // The time first seen stays put.
        let again = try backend.children(of: site.identifier, after: nil, limit: 100)
        #expect(again.items.first { $0.name == "plain.txt" }?.lock?.since == plain.since)
    }
}
