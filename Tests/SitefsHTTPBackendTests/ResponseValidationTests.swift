import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SitefsAPI
import SitefsHTTPBackend
import SitefsProvider
import Synchronization
import Testing

private func item(name: String = #""Plan.odt""#, size: Int = 10, parent: String? = "1", kind: String = "file", id: String = "7") -> String {
    let parentJSON = parent.map { "\"\($0)\"" } ?? "null"
    return #"{"id":"\#(id)","parent_id":\#(parentJSON),"site_id":"1","name":\#(name),"kind":"\#(kind)","size":\#(size),"content_type":null,"created_at":"2026-11-01T10:00:00Z","modified_at":"2026-11-01T10:00:00Z","created_by":"a","modified_by":"a","etag":"e","capabilities":["read"]}"#
}

private func expectInvalid(_ body: @Sendable () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        try body()
        Issue.record("expected an invalid-response error", sourceLocation: sourceLocation)
    } catch ProviderError.invalidResponse {
    } catch {
        Issue.record("expected invalidResponse, got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct ResponseValidationTests {
    /// A page's unusable item is left out with its reason; its neighbours still list.
    @Test(arguments: [#""a/b""#, #""..""#, #"".""#, #""nul\u0000byte""#, "\"\(String(repeating: "x", count: 256))\"", #""""#])
    func unusableNamesAreLeftOutOfAPage(name: String) async throws {
        let page = #"{"items":[\#(item(name: name)),\#(item(name: #""fine.odt""#, id: "8"))],"next_cursor":null}"#
        try await withCraftedServer(body: page) { backend in
            let served = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10)
            #expect(served.items.map(\.name) == ["fine.odt"])
            #expect(served.refused.count == 1 && served.refused[0].contains("unusable name"), "\(served.refused)")
            expectInvalid { _ = try backend.item(ItemIdentifier(site: "1", id: "7")) }
        }
    }

    /// A size no file can have: from 2^63 - 1, `tail -c 10` crashed the daemon.
    @Test(arguments: [-1, Int.max, Int(ProviderItem.maximumSize) + 1])
    func impossibleSizesAreLeftOut(size: Int) async throws {
        try await withCraftedServer(body: #"{"items":[\#(item(size: size))],"next_cursor":null}"#) { backend in
            let served = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10)
            #expect(served.items.isEmpty && served.refused.count == 1, "\(served.refused)")
        }
    }

    @Test func aSiteNamedDotDotIsLeftOutAndTheOtherSitesList() async throws {
        let site = #"{"id":"1","parent_id":null,"site_id":"1","name":"..","kind":"site","size":0,"content_type":null,"created_at":"2026-11-01T10:00:00Z","modified_at":"2026-11-01T10:00:00Z","created_by":"a","modified_by":"a","etag":"e","capabilities":["read"]}"#
        let good = site.replacingOccurrences(of: #""id":"1""#, with: #""id":"2""#).replacingOccurrences(of: #""site_id":"1""#, with: #""site_id":"2""#)
            .replacingOccurrences(of: #""name":"..""#, with: #""name":"Harbour""#)
        try await withCraftedServer(body: #"{"items":[\#(site),\#(good)],"next_cursor":null}"#) { backend in
            let served = try backend.sites(after: nil, limit: 10)
            #expect(served.items.map(\.name) == ["Harbour"])
            #expect(served.refused.count == 1)
        }
    }

    @Test func cursorsThatCannotBeCursorsFailThePage() async throws {
        for cursor in [#""""#, "\"\(String(repeating: "c", count: 5000))\""] {
            try await withCraftedServer(body: #"{"items":[],"next_cursor":\#(cursor)}"#) { backend in
                expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
            }
        }
    }

    @Test func malformedJSONAndStrangersAreRefused() async throws {
        try await withCraftedServer(body: #"{"items":[{"id": 7,"#) { backend in
            expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
            expectInvalid { _ = try backend.sites(after: nil, limit: 10) }
        }
        // An item listed in a folder it does not belong to; a file in the site list: left out.
        try await withCraftedServer(body: #"{"items":[\#(item(parent: "99"))],"next_cursor":null}"#) { backend in
            let children = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10)
            let sites = try backend.sites(after: nil, limit: 10)
            #expect(children.refused.count == 1 && sites.refused.count == 1)
        }
        // Asked for one item, got another.
        try await withCraftedServer(body: item(id: "8")) { backend in
            expectInvalid { _ = try backend.item(ItemIdentifier(site: "1", id: "7")) }
        }
        // Content without a version.
        try await withCraftedServer(body: "bytes") { backend in
            expectInvalid { _ = try backend.fetchContent(of: ItemIdentifier(site: "1", id: "7"), version: nil, range: nil,
                                                         ifNoneMatch: nil, into: .pieces(limit: 100) { _ in }) }
        }
    }

    @Test func piecesArriveInOrderAndNoMoreThanTheLimit() async throws {
        try await withCraftedServer(body: "0123456789", headers: [.eTag: "\"v1\""]) { backend in
            let received = Mutex<[UInt8]>([])
            let outcome = try backend.fetchContent(of: ItemIdentifier(site: "1", id: "7"), version: nil, range: nil,
                                                   ifNoneMatch: nil, into: .pieces(limit: 10) { piece in
                                                       received.withLock { $0 += piece }
                                                   })
            guard case .fetched(let version, _) = outcome else { Issue.record("got \(outcome)"); return }
            #expect(version == "v1")
            #expect(received.withLock { $0 } == Array("0123456789".utf8))
            // A server sending more than was asked for is refused, and what it sent past the
            // limit is never handed on.
            received.withLock { $0 = [] }
            expectInvalid { _ = try backend.fetchContent(of: ItemIdentifier(site: "1", id: "7"), version: nil, range: nil,
                                                         ifNoneMatch: nil, into: .pieces(limit: 4) { piece in
                                                             received.withLock { $0 += piece }
                                                         }) }
            #expect(received.withLock { $0.count } <= 4)
        }
    }

    @Test func statusesMapToProviderErrors() async throws {
        let cases: [(HTTPResponse.Status, String, @Sendable (ProviderError) -> Bool)] = [
            (.unauthorized, "unauthorized", { if case .notAuthenticated = $0 { true } else { false } }),
            (.forbidden, "read_only", { if case .forbidden = $0 { true } else { false } }),
            (.notFound, "not_found", { if case .notFound = $0 { true } else { false } }),
            (.serviceUnavailable, "busy", { $0.isTransient }),
            (.tooManyRequests, "slow_down", { $0.isTransient }),
        ]
        for (status, code, matches) in cases {
            try await withCraftedServer(status: status, body: #"{"error":{"code":"\#(code)","message":"m"}}"#) { backend in
                do throws(ProviderError) {
                    _ = try backend.item(ItemIdentifier(site: "1", id: "7"))
                    Issue.record("\(status) did not fail")
                } catch {
                    #expect(matches(error), "\(status) became \(error)")
                }
            }
        }
    }

    @Test func retryAfterIsReadFromTheResponse() async throws {
        try await withCraftedServer(status: .tooManyRequests, body: #"{"error":{"code":"slow","message":"m"}}"#,
                                    headers: [HTTPField.Name("Retry-After")!: "7"]) { backend in
            do throws(ProviderError) {
                _ = try backend.item(ItemIdentifier(site: "1", id: "7"))
                Issue.record("429 did not fail")
            } catch {
                #expect(error.isTransient && error.retryAfter == 7)
            }
        }
    }

    @Test func anUnreachableServerIsTransientAndQuick() throws {
        let backend = HTTPDocumentBackend(baseURL: "http://127.0.0.1:9", tokens: FixedToken(nil),
                                          timeouts: .init(connect: .seconds(2), lowSpeedTime: .seconds(2), overall: .seconds(4)))
        let started = Date()
        do throws(ProviderError) {
            _ = try backend.sites(after: nil, limit: 1)
            Issue.record("port 9 answered")
        } catch {
            #expect(error.isTransient)
        }
        #expect(Date().timeIntervalSince(started) < 10)
    }
}
