/// The hrefs of a multistatus, checked against the URL the mount was given (RFC 4918 §8.3:
/// an href is a URI or an absolute path). A server names items by path, and a hostile or
/// broken one may name anything: an href is only followed when it lies below the mount's
/// base path, on the same origin, and every segment below it decodes to a usable name.
public enum DAVHref {
    /// The decoded path segments of `href` below `basePath` (the path of the mount URL,
    /// percent-encoded as the server would write it); `[]` is the base itself. Nil when the
    /// href is a URL of another origin than `origin` ("https://host:port", lowercase), is not
    /// below the base, carries a query or fragment, or has a segment that is empty, `.`,
    /// `..`, or decodes to something with a `/` or NUL in it or that is not UTF-8.
    public static func components(of href: String, below basePath: String, origin: String) -> [String]? {
        Base(path: basePath, origin: origin)?.components(of: href)
    }

    /// The mount URL's path and origin, decoded once for all the hrefs of a listing.
    public struct Base: Sendable {
        let segments: [[UInt8]]
        let origin: String
        /// The path as given, ending in `/` (see `components(of:below:encoded:)`).
        let encodedPrefix: [UInt8]

        /// Nil when `path` is not an absolute path of usable segments.
        public init?(path: String, origin: String) {
            guard let segments = DAVHref.segments(of: path) else { return nil }
            self.segments = segments.map { Array($0.utf8) }
            self.origin = origin.lowercased()
            encodedPrefix = Array(path.utf8) + (path.hasSuffix("/") ? [] : [UInt8(ascii: "/")])
        }

        /// As `DAVHref.components(of:below:origin:)`.
        public func components(of href: String) -> [String]? {
            guard let path = DAVHref.path(of: href, origin: origin) else { return nil }
            return components(ofPath: path, below: [], encoded: encodedPrefix)
        }

        /// As `components(of:)`, for the hrefs of one listing: `known` are the components of
        /// the listed collection (decoded, checked) and `encoded` its path as the request
        /// wrote it, ending in `/`. An href that begins with those very bytes, as a server
        /// echoing the request writes every one, has only the segments after them decoded.
        public func components(of href: String, below known: [String], encoded: [UInt8]) -> [String]? {
            guard let path = DAVHref.path(of: href, origin: origin) else { return nil }
            return components(ofPath: path, below: known, encoded: encoded)
        }

        private func components(ofPath path: String, below known: [String], encoded: [UInt8]) -> [String]? {
            // The same bytes as `known` came from: the same segments.
            if encoded.last == UInt8(ascii: "/"), path.utf8.starts(with: encoded) {
                return DAVHref.segments(of: path.utf8.dropFirst(encoded.count)).map { known + $0 }
            }
            guard let all = DAVHref.segments(of: path), all.count >= segments.count,
                  zip(all, segments).allSatisfy({ $0.utf8.elementsEqual($1) })  // as bytes: NFC is not NFD
            else { return nil }
            return Array(all[segments.count...])
        }
    }

    /// The path of an href given as an absolute path or as a URL of `origin` (lowercase).
    private static func path(of href: String, origin: String) -> String? {
        guard !href.utf8.contains(UInt8(ascii: "?")), !href.utf8.contains(UInt8(ascii: "#")) else { return nil }
        if href.hasPrefix("/") { return href }
        let lowered = href.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else { return nil }
        let afterScheme = href.utf8.split(separator: UInt8(ascii: "/"), maxSplits: 3, omittingEmptySubsequences: false)
        // "https:", "", "host:port", "rest"
        guard afterScheme.count >= 3 else { return nil }
        let hrefOrigin = (String(decoding: afterScheme[0], as: UTF8.self) + "//" + String(decoding: afterScheme[2], as: UTF8.self))
            .lowercased()
        guard hrefOrigin == origin else { return nil }
        return afterScheme.count == 4 ? "/" + String(decoding: afterScheme[3], as: UTF8.self) : "/"
    }

    /// An absolute path's segments, each percent-decoded and checked; a trailing `/` is
    /// dropped (a collection's href).
    private static func segments(of path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        return segments(of: path.utf8.dropFirst())
    }

    /// The segments of a relative path (what follows a `/`), as `segments(of:)` reads them;
    /// an empty one is no segment.
    private static func segments(of relative: Substring.UTF8View) -> [String]? {
        guard !relative.isEmpty else { return [] }
        var raw = relative.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)[...]
        if raw.last?.isEmpty == true { raw = raw.dropLast() }
        var result: [String] = []
        for segment in raw {
            guard let name = decode(segment), !name.isEmpty, name != ".", name != ".." else { return nil }
            result.append(name)
        }
        return result
    }

    /// One path segment of a URL, percent-decoded and checked as an href's are: nil when it
    /// is empty, `.`, `..`, or decodes to something with a `/` or NUL in it or not UTF-8.
    public static func decodedSegment(_ segment: String) -> String? {
        guard let name = decode(segment.utf8[...]), !name.isEmpty, name != ".", name != ".." else { return nil }
        return name
    }

    /// Percent-decodes one segment; nil for a bad escape, a decoded `/` or NUL, or bytes that
    /// are not UTF-8.
    static func decode(_ segment: Substring.UTF8View.SubSequence) -> String? {
        var bytes: [UInt8] = []
        var index = segment.startIndex
        while index < segment.endIndex {
            let byte = segment[index]
            if byte == UInt8(ascii: "%") {
                let high = segment.index(after: index)
                guard high < segment.endIndex else { return nil }
                let low = segment.index(after: high)
                guard low < segment.endIndex, let h = hexValue(segment[high]), let l = hexValue(segment[low]) else { return nil }
                bytes.append(h << 4 | l)
                index = segment.index(after: low)
            } else {
                bytes.append(byte)
                index = segment.index(after: index)
            }
        }
        guard !bytes.contains(0), !bytes.contains(UInt8(ascii: "/")),
              let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
