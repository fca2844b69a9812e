/// The request methods the sitefs API and WebDAV use. A closed set, so a typo cannot reach the wire.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET"
    case put = "PUT"
    case post = "POST"
    case patch = "PATCH"
    case delete = "DELETE"
    case head = "HEAD"
    // WebDAV (RFC 4918).
    case propfind = "PROPFIND"
    case proppatch = "PROPPATCH"
    case mkcol = "MKCOL"
    case move = "MOVE"
    case copy = "COPY"
    case options = "OPTIONS"
    case lock = "LOCK"
    case unlock = "UNLOCK"

    /// Methods that always carry a request body, sent as `Content-Length: 0` when the caller
    /// gives none: servers and proxies may reject a PUT/POST/PATCH without a length.
    var alwaysSendsBody: Bool {
        switch self {
        case .put, .post, .patch: return true
        case .get, .delete, .head, .propfind, .proppatch, .mkcol, .move, .copy, .options, .lock, .unlock: return false
        }
    }
}
