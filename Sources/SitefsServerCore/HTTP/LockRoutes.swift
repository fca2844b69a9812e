import HTTPTypes
import Hummingbird
import SitefsAPI

/// `PUT /v1/items/{id}/lock` (take or refresh) and `DELETE /v1/items/{id}/lock` (release or
/// break), and the `Lock-Token` header every write reads (see `DocumentStore+Locks.swift`).
struct LockRoutes {
    let documents: DocumentStore

    static let lockTokenHeader = HTTPField.Name("Lock-Token")!

    /// The lock tokens a request carries (none without the header); 400 when the header is
    /// not a list of tokens.
    static func tokens(in request: Request) throws -> LockTokens {
        try LockTokens.parse(headerValues: request.headers[values: lockTokenHeader])
    }

    /// 201 and the grant when the lock is new, 200 when the caller's live lock was
    /// refreshed. The token is a secret: never cached.
    func take(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let body = try await JSONBody.decode(LockRequestBody.self, from: request, context: context)
        let (grant, created) = try await documents.takeLock(
            on: try context.parameters.require("id"), body, tokens: try Self.tokens(in: request), by: try context.requireCaller())
        return JSONBody.response(grant, status: created ? .created : .ok, headers: [.cacheControl: "no-store"])
    }

    func release(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try await documents.releaseLock(
            on: try context.parameters.require("id"), tokens: try Self.tokens(in: request), by: try context.requireCaller())
        return Response(status: .noContent)
    }
}
