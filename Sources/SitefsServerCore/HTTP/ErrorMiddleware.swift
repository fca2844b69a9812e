import Hummingbird
import Logging
import NIOHTTP1

/// Turns every error into the API's JSON error response, so clients always get
/// `{"error": {"code", "message"}}`, and the request log sees the real status.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            let noRoute = error.status == .notFound && error.body == nil
            if noRoute, let allowed = AllowedMethods.methods(for: request.uri.path) {
                // A path the API has, asked with a method it does not answer there.
                let names = allowed.map(\.rawValue)
                var refused = APIError(.methodNotAllowed, code: "method_not_allowed",
                                       "\(request.method) is not allowed here; use \(names.joined(separator: " or "))")
                refused.extraHeaders[.allow] = names.joined(separator: ", ")
                return try refused.response(from: request, context: context)
            }
            var converted = APIError(error.status, code: Self.code(for: error.status), error.body ?? error.status.reasonPhrase)
            if noRoute { converted.message = "no such endpoint" }
            converted.extraHeaders = error.headers
            return try converted.response(from: request, context: context)
        } catch let error as HTTPParserError {
            // The client's request did not parse (a body shorter than its Content-Length, a
            // bad chunk size): its fault, not the server's.
            return try APIError.badRequest("malformed request: \(error)", code: "malformed_request")
                .response(from: request, context: context)
        } catch {
            logger.error("internal error in \(request.method) \(request.uri.path): \(error)")
            return try APIError(.internalServerError, code: "internal", "the server failed; see its log")
                .response(from: request, context: context)
        }
    }

    static func code(for status: HTTPResponse.Status) -> String {
        switch status {
        case .badRequest: return "bad_request"
        case .unauthorized: return "unauthorized"
        case .forbidden: return "forbidden"
        case .notFound: return "not_found"
        case .methodNotAllowed: return "method_not_allowed"
        case .conflict: return "conflict"
        case .preconditionFailed: return "version_mismatch"
        case .contentTooLarge: return "too_large"
        case .rangeNotSatisfiable: return "bad_range"
        case .init(code: 423): return "locked"
        default: return "http_\(status.code)"
        }
    }
}
