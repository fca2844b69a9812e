import SitefsHTTP

/// The next page's cursor as the server names it in a listing's `Link` header (RFC 8288,
/// `rel="next"`; see the API's `NextPageLink`), read before the page's body is decoded so the
/// next page can be asked for meanwhile.
///
/// Read leniently: anything it does not understand gives nil, and the page's own
/// `next_cursor` is used as always. The cursor is a hint only (see
/// `DocumentBackend.children(of:after:limit:nextKnown:)`).
enum NextPageLink {
    /// A longer header is not looked at: a listing's `Link` is one short address.
    static let longestHeader = 8192

    /// The `cursor` query parameter of the first `rel="next"` link in `header`, or nil.
    static func cursor(in header: String) -> String? {
        guard header.utf8.count <= longestHeader else { return nil }
        for value in header.split(separator: ",") {
            let value = value.drop { $0 == " " || $0 == "\t" }
            guard value.first == "<", let close = value.firstIndex(of: ">") else { continue }
            let target = value[value.index(after: value.startIndex)..<close]
            let parameters = value[value.index(after: close)...].split(separator: ";")
            guard parameters.contains(where: isRelNext) else { continue }
            return cursor(inTarget: target)
        }
        return nil
    }

    /// Whether a link parameter is `rel` with `next` among its relation types.
    private static func isRelNext(_ parameter: Substring) -> Bool {
        let parts = parameter.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, parts[0].trimmingSpaces.lowercased() == "rel" else { return false }
        var types = parts[1].trimmingSpaces
        if types.count >= 2, types.first == "\"", types.last == "\"" { types = types.dropFirst().dropLast() }
        return types.split(separator: " ").contains { $0.lowercased() == "next" }
    }

    /// The `cursor` of a link target's query: unreserved characters only (what the server's
    /// cursors are, and what needs no decoding), within the length a page's cursor may have.
    private static func cursor(inTarget target: Substring) -> String? {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") where pair.hasPrefix("cursor=") {
            let cursor = pair.dropFirst("cursor=".count)
            guard !cursor.isEmpty, cursor.utf8.count <= ResponseValidation.maximumCursorLength,
                  cursor.utf8.allSatisfy(PercentEncoding.isUnreserved) else { return nil }
            return String(cursor)
        }
        return nil
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
