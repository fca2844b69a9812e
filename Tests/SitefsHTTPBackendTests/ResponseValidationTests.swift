import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SitefsAPI
import SitefsHTTPBackend
import SitefsProvider
import Synchronization
import Testing

/// A server that answers whatever a test wants, to check that bad responses are refused.
private func withCraftedServer(
    status: HTTPResponse.Status = .ok, body: String, headers: HTTPFields = [:],
    _ test: @Sendable @escaping (HTTPDocumentBackend) throws -> Void
) async throws {
    let router = Router()
    let respond: @Sendable (Request, BasicRequestContext) async throws -> Response = { _, _ in
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
    router.get("/v1/sites", use: respond)
    router.get("/v1/items/:id", use: respond)
    router.get("/v1/items/:id/children", use: respond)
    router.get("/v1/items/:id/content", use: respond)
    router.get("/v1/changes", use: respond)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
    try await app.test(.live) { client in
        let port = try #require(client.port)
        let backend = HTTPDocumentBackend(baseURL: "http://127.0.0.1:\(port)", tokens: FixedToken("t"),
                                          timeouts: .init(connect: .seconds(5), lowSpeedTime: .seconds(5), overall: .seconds(10)))
        // The backend blocks; run it off the cooperative pool.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try test(backend) }) }.start()
        }
    }
}

private func item(name: String = "Plan.odt", size: Int = 10, parent: String? = "1", kind: String = "file", id: String = "7") -> String {
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
    @Test(arguments: [#""a/b""#, #"".."""#, #"".""#, #""nul\u0000byte""#, "\"\(String(repeating: "x", count: 256))\"", #""""#])
    func unusableNamesAreRefused(name: String) async throws {
        let page = #"{"items":[\#(item(name: name))],"next_cursor":null}"#
        try await withCraftedServer(body: page) { backend in
            expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
        }
    }

    @Test func negativeSizesMalformedJSONAndStrangersAreRefused() async throws {
        try await withCraftedServer(body: #"{"items":[\#(item(size: -1))],"next_cursor":null}"#) { backend in
            expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
        }
        try await withCraftedServer(body: #"{"items":[{"id": 7,"#) { backend in
            expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
            expectInvalid { _ = try backend.sites(after: nil, limit: 10) }
        }
        // An item listed in a folder it does not belong to; a file in the site list.
        try await withCraftedServer(body: #"{"items":[\#(item(parent: "99"))],"next_cursor":null}"#) { backend in
            expectInvalid { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
            expectInvalid { _ = try backend.sites(after: nil, limit: 10) }
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
