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
    /// An HTTP status other than 207 Multi-Status.
    case status(Int)
    /// The body was not a usable multistatus.
    case body(DAVParseError)

    public var description: String {
        switch self {
        case .transport(let why, _): why
        case .status(let code): "PROPFIND answered HTTP \(code)"
        case .body(let error): error.description
        }
    }
}

/// Lists collections with `PROPFIND Depth: 1` (never `infinity`: RFC 4918 §9.1 lets a server
/// refuse it, and a whole tree is never what a listing needs), the body parsed as it arrives.
public struct WebDAVListing: Sendable {
    /// The live properties a listing asks for; the file id where the server has one.
    static let requestBody = Array("""
        <?xml version="1.0" encoding="utf-8"?>
        <d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>\
        <d:resourcetype/><d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/>\
        <d:displayname/><oc:fileid/></d:prop></d:propfind>
        """.utf8)

    let client: HTTPClient
    /// The mount URL's path, percent-encoded, ending in `/` (`/remote.php/dav/files/anna/`).
    let basePath: String
    /// `https://host:port` of the mount URL: hrefs of any other origin are refused.
    let origin: String
    let headers: [(String, String)]
    let limits: MultistatusParser.Limits

    public init(client: HTTPClient, basePath: String, origin: String, headers: [(String, String)] = [],
                limits: MultistatusParser.Limits = .init()) {
        self.client = client
        self.basePath = basePath.hasSuffix("/") ? basePath : basePath + "/"
        self.origin = origin
        self.headers = headers
        self.limits = limits
    }

    /// The children of the collection at `components` below the mount URL, each handed to
    /// `onEntry` as its response arrives. The collection's own entry is returned; entries
    /// that are not its direct children, or whose href cannot be a name (see `DAVHref`),
    /// are handed to `onRefused` with the reason instead.
    @discardableResult
    public func children(of components: [String], onEntry: @escaping (WebDAVEntry) -> Void,
                         onRefused: @escaping (String) -> Void = { _ in }) throws(WebDAVListingError) -> WebDAVEntry? {
        var own: WebDAVEntry?
        let parser = MultistatusParser(limits: limits) { response in
            guard let path = DAVHref.components(of: response.href, below: basePath, origin: origin) else {
                return onRefused("an href outside the mount or not a usable name: \(response.href.debugDescription)")
            }
            let entry = WebDAVEntry(name: path.last ?? "", components: path, properties: response.properties)
            if path.count == components.count, Self.same(path, components) {
                own = entry
            } else if path.count == components.count + 1, Self.same(Array(path.dropLast()), components) {
                onEntry(entry)
            } else {
                onRefused("an entry that is not a child of the listed collection: \(response.href.debugDescription)")
            }
        }
        var request = HTTPRequest(method: .propfind, path: basePath + components.map(PercentEncoding.encodeComponent).joined(separator: "/"),
                                  headers: headers + [("Depth", "1"), ("Content-Type", "application/xml; charset=utf-8")],
                                  body: .bytes(Self.requestBody))
        if !components.isEmpty { request.path += "/" }
        let response: HTTPResponse
        do throws(HTTPClientError) {
            response = try client.send(request, into: .chunks { chunk in try parser.feed(chunk) })
        } catch {
            if case .sinkFailed(let failure) = error, let parse = failure as? DAVParseError { throw .body(parse) }
            throw .transport(error.description, transient: error.isTransient)
        }
        guard response.status == 207 else { throw .status(response.status) }
        do throws(DAVParseError) { try parser.finish() } catch { throw .body(error) }
        return own
    }

    /// Names compared as bytes (a composed and a decomposed "é" are two names).
    static func same(_ a: [String], _ b: [String]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { Array($0.utf8) == Array($1.utf8) }
    }
}
