import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SitefsHTTPBackend
import Testing

/// A server that answers whatever a test wants (crafted, broken or hostile replies), on
/// 127.0.0.1, with an `HTTPDocumentBackend` pointed at it: every reply path of the client is
/// tested against it. `respond` sees each request.
func withHostileServer(
    _ respond: @escaping @Sendable (Request) async throws -> Response,
    _ test: @Sendable @escaping (HTTPDocumentBackend) throws -> Void
) async throws {
    let router = Router()
    let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in try await respond(request) }
    router.get("/v1/sites", use: handler)
    router.get("/v1/items/:id", use: handler)
    router.get("/v1/items/:id/children", use: handler)
    router.get("/v1/items/:id/content", use: handler)
    router.get("/v1/changes", use: handler)
    router.get("/v1/search", use: handler)
    router.get("/v1/items/:id/versions", use: handler)
    router.post("/v1/items/:id/versions/:etag/restore", use: handler)
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

/// The same with one fixed JSON reply to every request.
func withCraftedServer(
    status: HTTPResponse.Status = .ok, body: String, headers: HTTPFields = [:],
    _ test: @Sendable @escaping (HTTPDocumentBackend) throws -> Void
) async throws {
    try await withHostileServer({ _ in
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: body)))
    }, test)
}
