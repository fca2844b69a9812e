import Foundation
import SitefsAPI
import SitefsHTTP
import SitefsProvider

extension HTTPDocumentBackend {
    /// Sends a request with the bearer token; transport failures become `unreachable`.
    func send(_ request: HTTPRequest, into sink: ResponseSink = .memory()) throws(ProviderError) -> HTTPResponse {
        var request = request
        if let token = tokens.token() { request.headers.append(("Authorization", "Bearer \(token)")) }
        do {
            return try client.send(request, into: sink)
        } catch {
            switch error {
            case .localIO: throw .localIO(error.description)
            case .responseTooLarge: throw .invalidResponse(error.description)
            case .invalidRequest: throw .invalidName(error.description)
            case .cancelled: throw .cancelled
            default: throw .unreachable(error.description)
            }
        }
    }

    /// A JSON call: success statuses decode `T`, anything else becomes a `ProviderError`.
    func json<T: Decodable>(_ type: T.Type, _ method: HTTPMethod, _ path: String, headers: [(String, String)] = [],
                            body: HTTPRequest.Body = .none, json: Bool = false, large: Bool = false,
                            progress: TransferProgress? = nil) throws(ProviderError) -> T {
        var headers = headers
        if json { headers.append(("Content-Type", "application/json")) }
        if case .file = body { headers.append(("Content-Type", "application/octet-stream")) }
        var request = HTTPRequest(method: method, path: path, headers: headers, body: body, appliesOverallTimeout: !large)
        if let progress { request.onBodyProgress = { progress.update(sent: $0) } }
        return try decodedJSON(request)
    }

    /// Sends `request`; a success status decodes `T`, anything else becomes a `ProviderError`.
    /// `received` sees a success response before its body is decoded.
    func decodedJSON<T: Decodable>(_ request: HTTPRequest, received: (HTTPResponse) -> Void = { _ in }) throws(ProviderError) -> T {
        let response = try send(request)
        guard response.isSuccess else { throw Self.error(for: response) }
        received(response)
        do {
            if let readable = T.self as? any JSONReadable.Type {
                // Listing pages, read by the thousand: see JSONReader.
                return try readable.init(jsonBytes: response.body) as! T
            }
            return try JSONDecoder().decode(T.self, from: Data(response.body))
        } catch {
            throw .invalidResponse("malformed \(T.self) from \(request.method.rawValue) \(request.path.split(separator: "?")[0]): \(error)")
        }
    }

    func checked(_ item: Item, expected identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        let converted = try ResponseValidation.providerItem(item, held: heldLocks.lockIDs())
        guard converted.identifier == identifier else {
            throw .invalidResponse("asked for \(identifier), got \(converted.identifier)")
        }
        return converted
    }

    func checked(_ item: Item, parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        let converted = try ResponseValidation.providerItem(item, held: heldLocks.lockIDs())
        guard converted.parent == parent else { throw .invalidResponse("created item \(item.id) is not in \(parent)") }
        return converted
    }

    /// Maps an error response (`{"error": {"code", "message"}}`) to a provider error.
    static func error(for response: HTTPResponse) -> ProviderError {
        let decoded = try? JSONDecoder().decode(ErrorResponse.self, from: Data(response.body))
        let code = decoded?.error.code ?? "http_\(response.status)"
        let message = decoded?.error.message ?? "HTTP \(response.status)"
        switch (response.status, code) {
        case (401, _): return .notAuthenticated(message)
        case (403, "read_only"), (403, "forbidden"): return .forbidden(message)
        case (403, _): return .forbidden(message)
        case (404, "not_found"), (404, "http_404"): return .notFound
        case (409, "name_taken"): return .nameTaken(message)
        case (412, _): return .versionMismatch(current: decoded?.item.flatMap { try? ResponseValidation.providerItem($0) })
        case (423, _):
            // The holder, when the body names a lock that can be shown; never this backend's
            // own (its token would have opened it).
            let lock = decoded?.lock.flatMap { ResponseValidation.problem(with: $0) == nil ? $0 : nil }
            return .locked(by: lock.map { ResponseValidation.providerLock($0, heldHere: false) })
        case (400, "invalid_name"): return .invalidName(message)
        case (400, "cross_site"): return .crossSite
        case (429, _), (500..., _):
            // Retry-After in seconds (the HTTP-date form is rare for APIs; it is ignored), capped.
            let retryAfter = response.headers["Retry-After"].flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                .map { min(max($0, 0), 300) }
            return .serverUnavailable(status: response.status, message: message, retryAfter: retryAfter)
        default: return .refused(status: response.status, code: code, message: message)
        }
    }

    static func itemPath(_ identifier: ItemIdentifier, _ suffix: String? = nil) -> String {
        "/v1/items/" + PercentEncoding.encodeComponent(identifier.id) + (suffix.map { "/" + $0 } ?? "")
    }

    static func query(_ parameters: KeyValuePairs<String, String?>) -> String {
        let pairs = parameters.compactMap { key, value in value.map { "\(key)=\(PercentEncoding.encodeComponent($0))" } }
        return pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&")
    }

    static func encode(_ value: some Encodable) throws(ProviderError) -> [UInt8] {
        do { return Array(try JSONEncoder().encode(value)) } catch { throw .localIO("cannot encode request: \(error)") }
    }

    static func unquote(_ etag: String) -> String {
        var tag = etag.trimmingCharacters(in: .whitespaces)
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = String(tag.dropFirst().dropLast()) }
        return tag
    }

    /// The whole content's size: from Content-Range for 206, Content-Length otherwise.
    static func totalSize(_ response: HTTPResponse, range: ClosedRange<Int64>?) throws(ProviderError) -> Int64 {
        if response.status == 206 {
            guard let header = response.headers["Content-Range"], let slash = header.lastIndex(of: "/"),
                  let total = Int64(header[header.index(after: slash)...]), total >= 0
            else { throw .invalidResponse("206 without a usable Content-Range") }
            return total
        }
        guard let total = response.headers["Content-Length"].flatMap(Int64.init) ?? Optional(response.bodyLength), total >= 0 else {
            throw .invalidResponse("bad Content-Length")
        }
        return total
    }
}
