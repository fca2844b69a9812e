import Foundation
import Logging
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// A server that answers with what no honest one would: entries that are refused (each with
/// its reason), never shown or followed, and per-member failures that are reported.
@Suite struct HostileServerTests {
    private static func multistatus(_ responses: [(href: String, props: String)]) -> String {
        let body = responses.map { response in
            "<d:response><d:href>\(response.href)</d:href><d:propstat><d:prop>\(response.props)</d:prop>"
                + "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
        }.joined()
        return #"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">"# + body + "</d:multistatus>"
    }

    private static let collection = "<d:resourcetype><d:collection/></d:resourcetype>"
    private static func file(size: String) -> String {
        "<d:resourcetype/><d:getcontentlength>\(size)</d:getcontentlength><d:getetag>\"e1\"</d:getetag>"
    }

    @Sendable private static func routes(_ request: TestRequest, _ connection: TestConnection) -> Bool {
        guard connection.readWholeBody(of: request) != nil else { return false }
        var status = "207 Multi-Status"
        var body = ""
        switch (request.method, String(request.path)) {
        case ("PROPFIND", "/"):
            body = multistatus([
                ("/", collection),
                ("/Good/", collection),
                ("/../etc/", collection),
                ("http://evil.example/Elsewhere/", collection),
                ("/a%2Fb/", collection),
                ("/nul%00/", collection),
                ("/Good/deeper/", collection),
                ("/huge.bin", file(size: "99999999999999999999")),
                ("/negative.bin", file(size: "-5")),
                ("/fine.txt", file(size: "12")),
            ])
        case ("PROPFIND", "/Good/"):
            body = multistatus([("/Good/", collection), ("/Good/Locked/", collection)])
        case ("DELETE", "/Good/Locked/"):
            body = #"<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/Good/Locked/held.txt</d:href>"#
                + "<d:status>HTTP/1.1 423 Locked</d:status></d:response></d:multistatus>"
        default:
            status = "404 Not Found"
        }
        let bytes = Array(body.utf8)
        return connection.send(Array("HTTP/1.1 \(status)\r\nContent-Type: application/xml\r\nContent-Length: \(bytes.count)\r\n\r\n".utf8) + bytes)
    }

    private func backend(_ server: TestServer) throws -> WebDAVDocumentBackend {
        WebDAVDocumentBackend(location: try #require(WebDAVLocation(server.baseURL + "/")), credentials: FixedAuthorization(nil),
                              identities: try IdentityTable(path: nil), logger: Logger(label: "test"))
    }

    @Test func entriesThatCannotBeShownAreRefusedEachWithItsReason() throws {
        let server = try TestServer(routes: Self.routes)
        defer { _ = server.stop() }
        let page = try backend(server).sites(after: nil, limit: 100)
        #expect(page.items.map(\.name).sorted() == ["Good", "fine.txt"])
        #expect(page.refused.count == 7, "\(page.refused)")
        #expect(page.refused.contains { $0.contains("outside the mount") && $0.contains("evil.example") })
        #expect(page.refused.contains { $0.contains("not a child") && $0.contains("deeper") })
        #expect(page.refused.filter { $0.contains("no usable size") }.count == 2)
    }

    @Test func aDeleteWhoseMemberFailedReportsThatMembersStatus() throws {
        let server = try TestServer(routes: Self.routes)
        defer { _ = server.stop() }
        let backend = try backend(server)
        let good = try #require(try backend.sites(after: nil, limit: 100).items.first { $0.name == "Good" })
        let locked = try #require(try backend.children(of: good.identifier, after: nil, limit: 100).items.first)
        #expect {
            try backend.delete(locked.identifier, baseVersion: nil)
        } throws: { error in
            // A member's 423: someone's lock (whose, the multistatus does not say).
            guard case .locked(nil) = error as? ProviderError else { return false }
            return true
        }
    }
}
