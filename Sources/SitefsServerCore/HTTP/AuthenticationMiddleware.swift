import Hummingbird

/// Resolves `Authorization: Bearer TOKEN` to a caller; anything else is 401.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let accounts: AccountStore

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let token = Self.bearerToken(in: request) else {
            throw APIError.unauthorized("this call needs 'Authorization: Bearer TOKEN'; sign in with POST /v1/session")
        }
        var context = context
        context.caller = try await accounts.caller(forToken: token)
        return try await next(request, context)
    }

    static func bearerToken(in request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}

import Foundation
