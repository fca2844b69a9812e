import SitefsWebDAV

/// An item's version on a WebDAV server, as sitefs keeps it in `ProviderItem.version`.
///
/// The ETag is the version (RFC 9110 §8.8.3). It is kept without its quotes, so a tag reads
/// the same from a PROPFIND's `getetag` and a GET's `ETag` header (WsgiDAV quotes only the
/// second), and without a weak marker: Apache marks a file's tag weak (`W/`) for the first
/// second after it changed and strong afterwards, for the same content, so keeping the marker
/// would show one version as two. Whether a tag is weak matters only for `If-Match`, which
/// needs strong comparison (RFC 9110 §13.1.1): the backend asks when it sends one.
///
/// A resource with no tag (nginx lists none) gets a version made of its size and modification
/// time (`lm:SIZE:SECONDS`), from PROPFIND and GET alike, which changes when the content does
/// unless a write keeps the size within the same second.
public enum EntityTag {
    /// The version for a tag as the server sent it, or nil for no (or an unusable) tag.
    public static func version(fromHeader header: String?) -> String? {
        guard var tag = header?.trimmingASCIIWhitespace, !tag.isEmpty else { return nil }
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = String(tag.dropFirst().dropLast()) }
        guard !tag.isEmpty, tag.utf8.count <= 256, !tag.hasPrefix("lm:"),
              !tag.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "\"") })
        else { return nil }
        return tag
    }

    /// Whether the server marked the tag weak.
    public static func isWeak(_ header: String?) -> Bool {
        header?.trimmingASCIIWhitespace.hasPrefix("W/") == true
    }

    /// The version of a resource without a tag.
    public static func fallbackVersion(size: Int64, modifiedSeconds: Int64) -> String {
        "lm:\(size):\(modifiedSeconds)"
    }

    /// The header value naming `version` in `If-Match` or `If-None-Match`; nil for a version
    /// made of size and time, which no server can compare.
    public static func header(for version: String) -> String? {
        version.hasPrefix("lm:") ? nil : "\"" + version + "\""
    }

    /// For a version made of size and time: its time as an HTTP-date, for `If-Modified-Since`.
    public static func modifiedSince(for version: String) -> String? {
        guard version.hasPrefix("lm:"), let seconds = version.split(separator: ":").last.flatMap({ Int64($0) }) else { return nil }
        return HTTPDate.format(secondsSinceEpoch: seconds)
    }
}

extension String {
    var trimmingASCIIWhitespace: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}
