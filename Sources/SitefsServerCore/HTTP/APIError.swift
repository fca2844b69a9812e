import Foundation
import Hummingbird
import SitefsAPI

/// An error the API reports to the client as `{"error": {"code", "message"}}`.
///
/// `code` is a stable machine-readable word; `message` is for people and may change.
/// Throwing one anywhere below a route produces exactly that response.
public struct APIError: Error, HTTPResponseError, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var code: String
    public var message: String
    /// The item as it is now (412 responses).
    public var item: Item?
    /// The lock in the way (423 responses).
    public var lock: ItemLock?
    public var extraHeaders: HTTPFields = [:]

    public init(_ status: HTTPResponse.Status, code: String, _ message: String, item: Item? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.item = item
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    public var headers: HTTPFields { extraHeaders }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONBody.response(ErrorResponse(code: code, message: message, item: item, lock: lock), status: status)
        response.headers.append(contentsOf: extraHeaders)
        return response
    }
}

extension APIError {
    /// Used for unknown ids and for items in sites the caller was not granted alike, so a
    /// caller cannot learn which ids exist elsewhere.
    static let notFound = APIError(.notFound, code: "not_found", "no such item")
    static func badRequest(_ message: String, code: String = "bad_request") -> APIError {
        APIError(.badRequest, code: code, message)
    }
    static func conflict(_ message: String, code: String = "name_taken") -> APIError {
        APIError(.conflict, code: code, message)
    }
    static let readOnly = APIError(.forbidden, code: "read_only", "this site is granted to you read-only")
    static func forbidden(_ message: String) -> APIError {
        APIError(.forbidden, code: "forbidden", message)
    }
    static func unauthorized(_ message: String) -> APIError {
        var error = APIError(.unauthorized, code: "unauthorized", message)
        error.extraHeaders[.wwwAuthenticate] = "Bearer realm=\"sitefs\""
        return error
    }
    static func preconditionFailed(current: Item) -> APIError {
        APIError(.preconditionFailed, code: "version_mismatch",
                 "the item's version is now \(current.etag)", item: current)
    }
    /// 429: this attempt comes too soon after failed ones (`SignInThrottle`).
    static func tooManyAttempts(retryAfter wait: Duration) -> APIError {
        let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
        var error = APIError(.tooManyRequests, code: "too_many_attempts",
                             "too many failed sign-ins; try again in \(seconds) s")
        error.extraHeaders[.retryAfter] = String(seconds)
        return error
    }
    /// 503: the server is too busy for this now.
    static func busy(retryAfterSeconds seconds: Int) -> APIError {
        var error = APIError(.serviceUnavailable, code: "busy", "the server is busy; try again in \(seconds) s")
        error.extraHeaders[.retryAfter] = String(seconds)
        return error
    }
    /// 503: the metadata database cannot be reached just now (PostgreSQL restarting).
    static var storeUnavailable: APIError {
        var error = APIError(.serviceUnavailable, code: "unavailable", "the server's database is unavailable; try again in 2 s")
        error.extraHeaders[.retryAfter] = "2"
        return error
    }
    static func contentTooLarge(limit: Int64) -> APIError {
        APIError(.contentTooLarge, code: "too_large", "the body is larger than the server's limit of \(limit) bytes")
    }
    static func rangeNotSatisfiable(size: Int64) -> APIError {
        var error = APIError(.rangeNotSatisfiable, code: "bad_range", "the range is outside the \(size)-byte content")
        error.extraHeaders[.contentRange] = "bytes */\(size)"
        return error
    }
    static func invalidName(_ violation: ItemName.Violation) -> APIError {
        .badRequest(violation.description, code: "invalid_name")
    }
}

/// JSON encoding of response bodies, in one place so every response looks the same.
enum JSONBody {
    static func encode(_ value: some Encodable) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        // Our own types encode infallibly; a failure here is a programming error.
        let data = try! encoder.encode(value)
        return ByteBuffer(bytes: data)
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        let body = encode(value)
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: fields, body: .init(byteBuffer: body))
    }

    /// Decodes a small JSON request body, with a 400 that says what was wrong.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 64 * 1024)
        } catch {
            throw APIError(.contentTooLarge, code: "too_large", "JSON bodies are limited to 64 KiB")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("malformed JSON body: \(describe(error))", code: "bad_json")
        } catch {
            throw APIError.badRequest("malformed JSON body", code: "bad_json")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "missing field '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
