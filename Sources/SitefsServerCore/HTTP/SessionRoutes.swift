import Hummingbird
import SitefsAPI

/// `POST /v1/session` (sign in) and `DELETE /v1/session` (revoke the token used).
struct SessionRoutes {
    let accounts: AccountStore

    func signIn(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let credentials = try await JSONBody.decode(SessionRequest.self, from: request, context: context)
        let grant = try await accounts.signIn(username: credentials.username, password: credentials.password,
                                              address: context.clientAddress)
        return JSONBody.response(grant, status: .created, headers: [.cacheControl: "no-store"])
    }

    func signOut(_ request: Request, context: ServerRequestContext) async throws -> Response {
        if let token = AuthenticationMiddleware.bearerToken(in: request) {
            try await accounts.signOut(token: token)
        }
        return Response(status: .noContent)
    }
}
