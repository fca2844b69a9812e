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
/// A version this mount made for an upload the server answered without a tag is `put:`
/// and random bits (`UploadTag`); a server tag that starts so is taken as none.
///
/// A resource with no tag (nginx lists none) gets a version made of its size and modification
/// time (`lm:SIZE:SECONDS`), from PROPFIND and GET alike, which changes when the content does
/// unless a write keeps the size within the same second.
public enum EntityTag {
    /// The version for a tag as the server sent it, or nil for no (or an unusable) tag.
    /// Read as bytes, once: a listing reads one tag per entry.
    public static func version(fromHeader header: String?) -> String? {
        guard let header else { return nil }
        return header.utf8.withContiguousStorageIfAvailable(version(fromBytes:))
            ?? Array(header.utf8).withUnsafeBufferPointer(version(fromBytes:))
    }

    private static func version(fromBytes header: UnsafeBufferPointer<UInt8>) -> String? {
        var tag = header.trimmingSpacesAndTabs
        if tag.starts(with: weakPrefix) { tag = tag.dropFirst(2) }
        if tag.count >= 2, tag.first == quote, tag.last == quote { tag = tag.dropFirst().dropLast() }
        guard !tag.isEmpty, tag.count <= 256, !tag.starts(with: fallbackPrefix), !tag.starts(with: uploadPrefix),
              !tag.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == quote })
        else { return nil }
        return String(decoding: tag, as: UTF8.self)
    }

    private static let quote = UInt8(ascii: "\"")
    private static let weakPrefix = Array("W/".utf8)
    private static let fallbackPrefix = Array("lm:".utf8)
    private static let uploadPrefix = Array(UploadTag.prefix.utf8)

    /// Whether the server marked the tag weak.
    public static func isWeak(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.utf8.trimmingSpacesAndTabs.starts(with: weakPrefix)
    }

    /// The version of a resource without a tag.
    public static func fallbackVersion(size: Int64, modifiedSeconds: Int64) -> String {
        "lm:\(size):\(modifiedSeconds)"
    }

    /// The header value naming `version` in `If-Match` or `If-None-Match`; nil for a version
    /// made of size and time, which no server can compare, and for an upload's own version
    /// (`UploadTag`), which the server knows by another tag.
    public static func header(for version: String) -> String? {
        isSizeAndTime(version) || UploadTag.isUploadVersion(version) ? nil : "\"" + version + "\""
    }

    /// Whether `version` is made of size and time (no tag), as `fallbackVersion` makes them.
    static func isSizeAndTime(_ version: String) -> Bool {
        version.utf8.starts(with: fallbackPrefix)
    }

    /// For a version made of size and time: its time as an HTTP-date, for `If-Modified-Since`.
    public static func modifiedSince(for version: String) -> String? {
        guard isSizeAndTime(version), let seconds = version.split(separator: ":").last.flatMap({ Int64($0) }) else { return nil }
        return HTTPDate.format(secondsSinceEpoch: seconds)
    }
}

extension String {
    /// Without the spaces and tabs around it (compared as bytes).
    var trimmingASCIIWhitespace: String {
        let trimmed = utf8.trimmingSpacesAndTabs
        return trimmed.count == utf8.count ? self : String(decoding: trimmed, as: UTF8.self)
    }
}

extension BidirectionalCollection where Element == UInt8 {
    /// Without the spaces and tabs at either end.
    var trimmingSpacesAndTabs: SubSequence {
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
