import SitefsHTTP
import SitefsWebDAV

/// One entry of a collection's listing: a child resource, its name decoded and checked.
public struct WebDAVEntry: Sendable, Equatable {
    /// The name under its collection (one path segment, decoded).
    public var name: String
    /// The decoded path segments below the mount URL.
    public var components: [String]
    public var properties: DAVProperties
}

/// Why a listing failed.
public enum WebDAVListingError: Error, Sendable, CustomStringConvertible {
    /// The server could not be reached or the transfer broke.
    case transport(String, transient: Bool)
    /// An HTTP status other than 207 Multi-Status, with the server's Retry-After if any.
    case status(Int, String?)
    /// The caller's `isCancelled` said so.
    case cancelled
    /// The body was not a usable multistatus.
    case body(DAVParseError)

    public var description: String {
        switch self {
        case .transport(let why, _): why
        case .status(let code, _): "PROPFIND answered HTTP \(code)"
        case .cancelled: "the listing was abandoned"
        case .body(let error): error.description
        }
    }
}

/// Lists collections with `PROPFIND Depth: 1` (never `infinity`: RFC 4918 §9.1 lets a server
/// refuse it, and a whole tree is never what a listing needs), the body parsed as it arrives.
public struct WebDAVListing: Sendable {
    /// The live properties a listing asks for; the file id where the server has one; the
    /// locks held on each resource (`lockdiscovery`: an empty element for a free one); the
    /// dead properties sitefs sets (`SitefsDeadProperties`: a mode, a link's target), which a
    /// server without them answers 404 for, at no cost.
    static let requestBody = Array("""
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:s="urn:sitefs:"><d:prop>\
        <d:resourcetype/><d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/>\
        <d:displayname/><oc:fileid/><d:lockdiscovery/><s:mode/><s:symlink-target/></d:prop></d:propfind>
        """.utf8)

    let client: HTTPClient
    /// The mount URL's path, percent-encoded, ending in `/` (`/remote.php/dav/files/anna/`).
    let basePath: String
    /// `https://host:port` of the mount URL: hrefs of any other origin are refused.
    let origin: String
    let headers: [(String, String)]
    let limits: MultistatusParser.Limits
    /// The base path and origin decoded once, for every href of every listing.
    let hrefBase: DAVHref.Base?

    public init(client: HTTPClient, basePath: String, origin: String, headers: [(String, String)] = [],
                limits: MultistatusParser.Limits = .init()) {
        self.client = client
        self.basePath = basePath.hasSuffix("/") ? basePath : basePath + "/"
        self.origin = origin
        self.headers = headers
        self.limits = limits
        hrefBase = DAVHref.Base(path: self.basePath, origin: origin)
    }

    /// The children of the collection at `components` below the mount URL, each handed to
    /// `onEntry` as its response arrives. The collection's own entry is returned; entries
    /// that are not its direct children, whose href cannot be a name (see `DAVHref`), or that
    /// the server reports an error for, are handed to `onRefused` with the reason instead.
    /// `isCancelled` is asked as the body arrives; true abandons the transfer.
    @discardableResult
    public func children(of components: [String], headers extra: [(String, String)] = [],
                         isCancelled: (@Sendable () -> Bool)? = nil,
                         onEntry: @escaping (WebDAVEntry) -> Void,
                         onRefused: @escaping (String) -> Void = { _ in }) throws(WebDAVListingError) -> WebDAVEntry? {
        try propfind(components, depth: "1", collection: true, headers: extra, isCancelled: isCancelled,
                     onEntry: onEntry, onRefused: onRefused)
    }

    /// The resource at `components` itself (`Depth: 0`), or nil when the server answered for
    /// it with an error status inside the multistatus (the reason goes to `onRefused`).
    public func resource(at components: [String], collection: Bool, headers extra: [(String, String)] = [],
                         onRefused: @escaping (String) -> Void = { _ in }) throws(WebDAVListingError) -> WebDAVEntry? {
        try propfind(components, depth: "0", collection: collection, headers: extra, isCancelled: nil,
                     onEntry: { _ in }, onRefused: onRefused)
    }

    private func propfind(_ components: [String], depth: String, collection: Bool, headers extra: [(String, String)],
                          isCancelled: (@Sendable () -> Bool)?, onEntry: @escaping (WebDAVEntry) -> Void,
                          onRefused: @escaping (String) -> Void) throws(WebDAVListingError) -> WebDAVEntry? {
        var own: WebDAVEntry?
        var requestPath = basePath + components.map(PercentEncoding.encodeComponent).joined(separator: "/")
        if !components.isEmpty, collection { requestPath += "/" }
        let encodedPath = Array(requestPath.utf8)
        let parser = MultistatusParser(limits: limits) { response in
            guard let path = hrefBase?.components(of: response.href, below: components, encoded: encodedPath) else {
                return onRefused("an href outside the mount or not a usable name: \(response.href.debugDescription)")
            }
            if let status = response.status, !(200..<300).contains(status) {
                return onRefused("the server reports HTTP \(status) for \(response.href.debugDescription)")
            }
            let entry = WebDAVEntry(name: path.last ?? "", components: path, properties: response.properties)
            if path.count == components.count, Self.same(path, components) {
                own = entry
            } else if depth == "1", path.count == components.count + 1, Self.same(path.dropLast(), components[...]) {
                onEntry(entry)
            } else {
                onRefused("an entry that is not a child of the listed collection: \(response.href.debugDescription)")
            }
        }
        var request = HTTPRequest(method: .propfind, path: requestPath,
                                  headers: headers + extra + [("Depth", depth), ("Content-Type", "application/xml; charset=utf-8")],
                                  body: .bytes(Self.requestBody))
        request.isCancelled = isCancelled
        // A whole collection in one body: no deadline fits every size, the low-speed limit
        // catches a stall.
        request.appliesOverallTimeout = depth == "0"
        let response: HTTPResponse
        do throws(HTTPClientError) {
            response = try client.send(request, into: .chunks { chunk in try parser.feed(chunk) })
        } catch {
            if case .sinkFailed(let failure) = error, let parse = failure as? DAVParseError { throw .body(parse) }
            if case .cancelled = error { throw .cancelled }
            throw .transport(error.description, transient: error.isTransient)
        }
        guard response.status == 207 else { throw .status(response.status, response.headers["Retry-After"]) }
        do throws(DAVParseError) { try parser.finish() } catch { throw .body(error) }
        return own
    }

    /// Names compared as bytes (a composed and a decomposed "é" are two names).
    static func same(_ a: ArraySlice<String>, _ b: ArraySlice<String>) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    static func same(_ a: [String], _ b: [String]) -> Bool {
        same(a[...], b[...])
    }
}
