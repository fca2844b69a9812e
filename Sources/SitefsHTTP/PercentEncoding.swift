/// Percent-encoding for one path segment or one query name/value.
///
/// Requests take an already-encoded path so the caller decides where the `/`, `?`, `&` and
/// `=` separators go; this helper encodes the pieces between them. Everything except the
/// RFC 3986 unreserved characters (ALPHA, DIGIT, `-`, `.`, `_`, `~`) becomes `%XX`, byte by
/// byte over UTF-8, so a file name containing `/`, `?`, `#`, `%`, `+`, spaces or any
/// non-ASCII text survives the trip as exactly the bytes it was.
public enum PercentEncoding {
    /// Encodes `component` so it can be placed between separators of a path or query.
    public static func encodeComponent(_ component: String) -> String {
        encodeComponent(utf8: Array(component.utf8))
    }

    /// Encodes raw bytes (e.g. a name that is not valid UTF-8) the same way.
    public static func encodeComponent(utf8 bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        for byte in bytes {
            if isUnreserved(byte) {
                output.append(byte)
            } else {
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Upper-case hex, the form RFC 3986 section 2.1 recommends.
    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Whether `byte` is an RFC 3986 unreserved character: one that stands for itself
    /// anywhere in a URL, never encoded.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
