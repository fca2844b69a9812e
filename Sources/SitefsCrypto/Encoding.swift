// Text encodings for binary values: hexadecimal for digests in logs and tests,
// unpadded base64url for anything that travels in URLs, cookies or stored strings.

/// Lowercase hexadecimal.
public enum Hex: Sendable {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase hex digits per byte.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex digits (either case). Returns nil for an odd length or any character
    /// that is not a hex digit, including whitespace and a `0x` prefix.
    public static func decode(_ string: String) -> [UInt8]? {
        let utf8 = Array(string.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let high = value(of: utf8[i]), let low = value(of: utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Base64 with the URL- and filename-safe alphabet (RFC 4648 §5), without padding.
public enum Base64URL: Sendable {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes without `=` padding, so the result can be used in URLs and in `$`-separated
    /// stored strings as is.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let group = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(group >> 18 & 0x3f)])
            out.append(alphabet[Int(group >> 12 & 0x3f)])
            out.append(alphabet[Int(group >> 6 & 0x3f)])
            out.append(alphabet[Int(group & 0x3f)])
            i += 3
        }
        switch bytes.count - i {
        case 1:
            let group = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(group >> 18 & 0x3f)])
            out.append(alphabet[Int(group >> 12 & 0x3f)])
        case 2:
            let group = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(group >> 18 & 0x3f)])
            out.append(alphabet[Int(group >> 12 & 0x3f)])
            out.append(alphabet[Int(group >> 6 & 0x3f)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded base64url. Strict, so that every byte string has exactly one
    /// accepted encoding (a stored hash cannot be altered without changing its bytes):
    /// returns nil for characters outside the alphabet (including `=`, `+`, `/` and
    /// whitespace), for an impossible length (1 mod 4), and for non-zero unused bits in
    /// the last character.
    public static func decode(_ string: String) -> [UInt8]? {
        let utf8 = Array(string.utf8)
        guard utf8.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bitCount = 0
        for character in utf8 {
            guard let value = value(of: character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bitCount += 6
            if bitCount >= 8 {
                bitCount -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bitCount)))
                accumulator &= (1 << UInt32(bitCount)) - 1
            }
        }
        // Leftover bits (2 or 4) are padding inside the last character and must be zero.
        guard accumulator == 0 else { return nil }
        return out
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
