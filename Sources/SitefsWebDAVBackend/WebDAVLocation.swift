import SitefsHTTP
import SitefsWebDAV

/// Where a WebDAV mount points: the origin requests go to and the collection the mount
/// shows, its path canonically percent-encoded.
public struct WebDAVLocation: Sendable, Equatable {
    /// `https://host:port` (as given, lowercased): the HTTP client's base URL, and the only
    /// origin a multistatus href may name.
    public let origin: String
    /// The collection's path, each segment percent-encoded the one way `PercentEncoding`
    /// does, ending in `/` (`/remote.php/dav/files/anna/`).
    public let basePath: String

    /// The URL as users write it: `http(s)://` or, as GNOME and KDE write them, `dav://`
    /// (http) and `davs://` (https). Nil for anything else (another scheme, a query or
    /// fragment, user info, a path segment that does not decode to a usable name).
    public init?(_ url: String) {
        guard let http = Self.httpURL(url) else { return nil }
        let afterScheme = http.hasPrefix("https://") ? http.dropFirst(8) : http.dropFirst(7)
        let scheme = http.hasPrefix("https://") ? "https" : "http"
        let authority = afterScheme.prefix { $0 != "/" }
        guard !authority.isEmpty, !authority.contains("@"), !http.contains("?"), !http.contains("#") else { return nil }
        var segments: [String] = []
        for raw in afterScheme.dropFirst(authority.count).split(separator: "/") {
            guard let name = DAVHref.decodedSegment(String(raw)) else { return nil }
            segments.append(name)
        }
        origin = scheme + "://" + authority.lowercased()
        basePath = "/" + segments.map { PercentEncoding.encodeComponent($0) + "/" }.joined()
    }

    /// `dav://` and `davs://` as `http://` and `https://`; an http(s) URL as it is (the
    /// scheme lowercased); nil for other schemes.
    public static func httpURL(_ url: String) -> String? {
        let lowered = url.lowercased()
        for (given, meant) in [("davs://", "https://"), ("dav://", "http://"), ("https://", "https://"), ("http://", "http://")]
        where lowered.hasPrefix(given) {
            return meant + url.dropFirst(given.count)
        }
        return nil
    }

    /// The percent-encoded path of the item at `components` below the collection; a
    /// collection's ends in `/` (RFC 4918 §5.2: servers redirect or refuse without it).
    public func path(of components: [String], collection: Bool) -> String {
        let joined = components.map(PercentEncoding.encodeComponent).joined(separator: "/")
        guard !components.isEmpty else { return basePath }
        return basePath + joined + (collection ? "/" : "")
    }

    /// The full URL of a path, for a MOVE's `Destination` header.
    public func url(of path: String) -> String { origin + path }
}
