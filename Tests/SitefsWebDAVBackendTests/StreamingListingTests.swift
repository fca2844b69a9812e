import Foundation
import Logging
import SitefsProvider
import SitefsTestSupport
@testable import SitefsWebDAVBackend
import Testing

/// A listing's first page is served while the server is still sending the rest: the core
/// gets entries as the response streams in, not once the whole collection has arrived.
@Suite struct StreamingListingTests {
    /// One entry of a multistatus: a collection when `href` ends in "/", else a one-byte file.
    static func response(for href: String) -> String {
        let props = href.hasSuffix("/") ? "<d:resourcetype><d:collection/></d:resourcetype>"
            : "<d:resourcetype/><d:getcontentlength>1</d:getcontentlength><d:getetag>\"e\"</d:getetag>"
        return "<d:response><d:href>\(href)</d:href><d:propstat><d:prop>\(props)</d:prop>"
            + "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
    }

    /// A multistatus body of `responses`; without its closing tag when not `closed` (the
    /// length of a prefix of it).
    static func multistatus(_ responses: [String], closed: Bool = true) -> [UInt8] {
        Array((#"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">"# + responses.joined() + (closed ? "</d:multistatus>" : "")).utf8)
    }

    static func header(for body: [UInt8]) -> [UInt8] {
        Array("HTTP/1.1 207 Multi-Status\r\nContent-Type: application/xml\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
    }

    /// The server sends the first half of a 600-entry multistatus, then holds the rest back
    /// until the test lets it go (or 20 s pass).
    private final class HeldBackServer: @unchecked Sendable {
        let release = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var restSent = false
        var sentTheRest: Bool { lock.withLock { restSent } }

        func routes(_ request: TestRequest, _ connection: TestConnection) -> Bool {
            guard connection.readWholeBody(of: request) != nil else { return false }
            guard request.method == "PROPFIND", request.path == "/" || request.path == "/Site/" else {
                return connection.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
            }
            let entries = request.path == "/" ? ["/", "/Site/"] : ["/Site/"] + (0..<600).map { "/Site/f\($0).txt" }
            let responses = entries.map(StreamingListingTests.response(for:))
            let body = StreamingListingTests.multistatus(responses)
            let header = StreamingListingTests.header(for: body)
            guard request.path == "/Site/" else { return connection.send(header + body) }
            let half = StreamingListingTests.multistatus(Array(responses[..<300]), closed: false).count
            guard connection.send(header + body[..<half]) else { return false }
            _ = release.wait(timeout: .now() + 20)
            lock.withLock { restSent = true }
            return connection.send(Array(body[half...]))
        }
    }

    @Test func theFirstPageArrivesBeforeTheRestOfTheResponse() throws {
        let held = HeldBackServer()
        let server = try TestServer(routes: { held.routes($0, $1) })
        defer {
            held.release.signal()
            _ = server.stop()
        }
        let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")),
                                            credentials: FixedAuthorization(nil), identities: try IdentityTable(path: nil),
                                            logger: Logger(label: "test"))
        let site = try #require(try backend.sites(after: nil, limit: 10).items.first)
        let first = try backend.children(of: site.identifier, after: nil, limit: 100)
        #expect(first.items.count == 100)
        #expect(!held.sentTheRest, "the first page waited for the whole response")
        held.release.signal()
        var names = first.items.map(\.name)
        var token = first.next
        while let next = token {
            let page = try backend.children(of: site.identifier, after: next, limit: 100)
            names += page.items.map(\.name)
            token = page.next
        }
        #expect(names.count == 600 && Set(names).count == 600)
    }

    /// A listing longer than every batch it is resolved in (256, then twice as many each
    /// time, up to the largest) lists each entry once, in the server's order, and a second
    /// listing gives each the identifier the first gave it.
    @Test func batchesOfGrowingSizeListEveryEntryOnceWithStableIdentifiers() throws {
        let count = 256 + 512 + 1_024 + 2 * WebDAVDocumentBackend.listingBatches.largest + 7
        // Not in name order, as a server lists in its own.
        let order = (0..<count).map { ($0 * 7_919) % count }
        let server = try TestServer(routes: { request, connection in
            guard connection.readWholeBody(of: request) != nil else { return false }
            let entries = request.path == "/" ? ["/", "/Site/"] : request.path == "/Site/" ? ["/Site/"] + order.map { "/Site/f\($0).txt" } : []
            guard !entries.isEmpty else { return connection.send(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8)) }
            let body = StreamingListingTests.multistatus(entries.map(StreamingListingTests.response(for:)))
            return connection.send(StreamingListingTests.header(for: body) + body)
        })
        defer { _ = server.stop() }
        let backend = WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")),
                                            credentials: FixedAuthorization(nil), identities: try IdentityTable(path: nil),
                                            logger: Logger(label: "test"))
        let site = try #require(try backend.sites(after: nil, limit: 10).items.first)
        func listing() throws -> [ProviderItem] {
            var items: [ProviderItem] = []
            var token: PageToken?
            repeat {
                let page = try backend.children(of: site.identifier, after: token, limit: 500)
                items += page.items
                token = page.next
            } while token != nil
            return items
        }
        let first = try listing()
        #expect(first.map(\.name) == order.map { "f\($0).txt" })
        #expect(Set(first.map(\.identifier)).count == count)
        let second = try listing()
        #expect(second.map(\.identifier) == first.map(\.identifier))
    }
}
