import SitefsHTTP
import SitefsProvider
import SitefsWebDAV

/// Where the `Authorization` header's value comes from (`Basic ...` or `Bearer ...`). The
/// mount reads it from the credentials file on each use, so signing in again while mounted
/// takes effect without a remount.
public protocol AuthorizationSource: Sendable {
    func authorization() -> String?
}

/// A fixed value (tests, one-shot commands).
public struct FixedAuthorization: AuthorizationSource {
    let value: String?
    public init(_ value: String?) { self.value = value }
    public func authorization() -> String? { value }
}

/// Requests to one WebDAV collection, with its credentials, and the mapping of what comes
/// back to provider errors: every status and transport failure becomes one `ProviderError`.
struct WebDAVTransport: Sendable {
    let client: HTTPClient
    let location: WebDAVLocation
    let credentials: any AuthorizationSource

    var authorizationHeaders: [(String, String)] {
        credentials.authorization().map { [("Authorization", $0)] } ?? []
    }

    func send(_ request: HTTPRequest, into sink: ResponseSink = .memory()) throws(ProviderError) -> HTTPResponse {
        var request = request
        request.headers += authorizationHeaders
        do {
            return try client.send(request, into: sink)
        } catch {
            throw Self.error(for: error)
        }
    }

    static func error(for error: HTTPClientError) -> ProviderError {
        switch error {
        case .localIO: .localIO(error.description)
        case .responseTooLarge: .invalidResponse(error.description)
        case .invalidRequest: .invalidName(error.description)
        case .cancelled: .cancelled
        default: .unreachable(error.description)
        }
    }

    /// What a status other than the expected one means (RFC 4918 §9 and RFC 7232).
    /// `operation` names the request for the message.
    static func error(status: Int, retryAfter: String?, _ operation: String) -> ProviderError {
        let message = "\(operation): HTTP \(status)"
        switch status {
        case 401: return .notAuthenticated(message)
        case 403: return .forbidden(message)
        case 404, 410: return .notFound
        // MKCOL on an existing name; MOVE/PUT refusing to overwrite (Overwrite: F, If-None-Match: *).
        case 405: return .nameTaken(message)
        case 412: return .versionMismatch(current: nil)
        case 414: return .invalidName(message)
        // Someone's lock (RFC 4918 §11.3); who, the caller asks the server where it can.
        case 423: return .locked(by: nil)
        case 429, 500...599:
            let seconds = retryAfter.flatMap { Double($0.trimmingASCIIWhitespace) }.map { min(max($0, 0), 300) }
            return .serverUnavailable(status: status, message: message, retryAfter: seconds)
        default: return .refused(status: status, code: "http_\(status)", message: message)
        }
    }

    static func error(for response: HTTPResponse, _ operation: String) -> ProviderError {
        error(status: response.status, retryAfter: response.headers["Retry-After"], operation)
    }

    static func error(for listing: WebDAVListingError, _ operation: String) -> ProviderError {
        switch listing {
        case .transport(let why, let transient): transient ? .unreachable(why) : .invalidResponse("\(operation): \(why)")
        case .status(let status, let retryAfter): error(status: status, retryAfter: retryAfter, operation)
        case .body(let parse): .invalidResponse("\(operation): \(parse)")
        case .cancelled: .cancelled
        }
    }

    /// A multistatus answering a DELETE, MOVE or COPY (RFC 4918 §9.6.1, §9.9.4): some member
    /// failed. The first failure's status stands for the whole.
    func multistatusFailure(_ response: HTTPResponse, _ operation: String) -> ProviderError {
        var statuses: [Int] = []
        let parser = MultistatusParser(limits: .init(responses: 10_000)) { entry in
            if let status = entry.status, !(200..<300).contains(status) { statuses.append(status) }
        }
        do throws(DAVParseError) {
            try parser.feed(response.body)
            try parser.finish()
        } catch {
            return .invalidResponse("\(operation): a malformed multistatus: \(error)")
        }
        guard let first = statuses.first else { return .invalidResponse("\(operation): a multistatus without a failure") }
        return Self.error(status: first, retryAfter: nil, operation + " (\(statuses.count) members failed)")
    }
}
