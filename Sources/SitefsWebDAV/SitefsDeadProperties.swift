/// The dead properties (RFC 4918 §4.2) sitefs keeps on servers that store them, in the
/// namespace `urn:sitefs:`, and their text formats. Both are written by sitefs only; what a
/// listing carries is checked here strictly, and anything else is treated as absent (the
/// caller logs it): a property is never trusted past its format.
///
/// - `mode`: permission bits as octal text, 1 to 4 digits `0`-`7` (sitefs writes 4: `0755`),
///   so at most `0o7777`. No sign, no `0o`, no spaces inside.
/// - `symlink-target`: a symbolic link's target bytes, percent-encoded: every byte other than
///   `A-Z a-z 0-9 - . _ ~ /` as `%XX` (upper-case hex), so any byte string survives XML and
///   every server's property store. Decoded, it must be a valid target (1...4095 bytes, no NUL).
public enum SitefsDeadProperties {
    public static let namespace = "urn:sitefs:"
    public static let mode = "mode"
    public static let symlinkTarget = "symlink-target"

    /// The largest mode the property may carry (rwx ×3, setuid, setgid, sticky).
    public static let maximumMode: UInt16 = 0o7777
    /// The longest target the property may carry (PATH_MAX less its NUL).
    public static let maximumTarget = 4095

    // MARK: mode

    /// `0755` for 0o755: always 4 octal digits. Nil for a value above `maximumMode`.
    public static func text(ofMode mode: UInt16) -> String? {
        guard mode <= maximumMode else { return nil }
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// The mode in `text` (already trimmed of surrounding whitespace), or nil when it is
    /// not 1 to 4 octal digits.
    public static func mode(from text: String) -> UInt16? {
        let bytes = Array(text.utf8)
        guard (1...4).contains(bytes.count), bytes.allSatisfy({ (0x30...0x37).contains($0) }) else { return nil }
        return bytes.reduce(UInt16(0)) { $0 * 8 + UInt16($1 - 0x30) }  // at most 0o7777: no overflow
    }

    // MARK: symlink-target

    /// The property text of `target`; nil for a target that is not valid (empty, too long,
    /// or with a NUL).
    public static func text(ofTarget target: [UInt8]) -> String? {
        guard isValidTarget(target) else { return nil }
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(target.count)
        for byte in target {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The target in `text`, or nil when it is not the encoding `text(ofTarget:)` makes
    /// (a raw byte that should have been escaped, a bad `%XX`) or not a valid target.
    public static func symlinkTarget(from text: String) -> [UInt8]? {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumTarget * 3 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x25 {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else {
                    return nil
                }
                out.append(high << 4 | low)
                index += 3
            } else {
                guard isUnreserved(byte) else { return nil }
                out.append(byte)
                index += 1
            }
        }
        return isValidTarget(out) ? out : nil
    }

    static func isValidTarget(_ target: [UInt8]) -> Bool {
        !target.isEmpty && target.count <= maximumTarget && !target.contains(0)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E, 0x2F: true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    // MARK: PROPPATCH

    /// A PROPPATCH body (RFC 4918 §9.2) setting the given `urn:sitefs:` properties. Values
    /// are the texts made above (ASCII without markup characters), escaped all the same.
    public static func propertyUpdate(setting values: [(name: String, value: String)]) -> [UInt8] {
        let props = values.map { "<s:\($0.name)>\(XMLText.escaped($0.value))</s:\($0.name)>" }.joined()
        return Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <d:propertyupdate xmlns:d="DAV:" xmlns:s="\(namespace)"><d:set><d:prop>\(props)</d:prop></d:set></d:propertyupdate>
            """.utf8)
    }
}
