/// An item's version on a WebDAV server, as sitefs keeps it in `ProviderItem.version`.
///
/// The ETag is the version (RFC 7232). It is kept without its quotes, so the same tag reads
/// the same whether it came from a PROPFIND's `getetag` or a GET's `ETag` header, which some
/// servers quote differently. A weak tag (`W/"..."`) keeps its `W/`: conditional writes
/// need strong comparison (RFC 7232 §3.1), which a weak tag never passes. A resource with no
/// tag at all gets a version made of its size and modification time (`lm:SIZE:SECONDS`),
/// which changes when the content does on every server seen, if not as surely.
public enum EntityTag {
    /// The version for a tag as the server sent it, or nil for no (or an empty) tag.
    public static func version(fromHeader header: String?) -> String? {
        guard var tag = header?.trimmingASCIIWhitespace, !tag.isEmpty else { return nil }
        var weak = false
        if tag.hasPrefix("W/") {
            weak = true
            tag.removeFirst(2)
        }
        if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = String(tag.dropFirst().dropLast()) }
        guard !tag.isEmpty, tag.utf8.count <= 256, !tag.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == UInt8(ascii: "\"") })
        else { return nil }
        return weak ? "W/" + tag : tag
    }

    /// The version of a resource without a tag.
    public static func fallbackVersion(size: Int64, modifiedSeconds: Int64) -> String {
        "lm:\(size):\(modifiedSeconds)"
    }

    /// The header value a conditional request sends for `version`, when it has one: only a
    /// strong tag can be matched (`If-Match`); a weak or made-up version cannot.
    public static func strongHeader(for version: String) -> String? {
        guard !version.hasPrefix("W/"), !version.hasPrefix("lm:") else { return nil }
        return "\"" + version + "\""
    }

    /// The header value for `If-None-Match` (weak comparison: a weak tag is fine there).
    public static func anyHeader(for version: String) -> String? {
        guard !version.hasPrefix("lm:") else { return nil }
        return version.hasPrefix("W/") ? "W/\"" + version.dropFirst(2) + "\"" : "\"" + version + "\""
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
