import SitefsAPI
/// Strict decoding of a URI query string.
///
/// Names of new files travel in the query (`?name=`), so decoding must be byte-exact:
/// percent escapes are decoded to bytes and the result must be valid UTF-8, or the request
/// is refused with a clear 400 rather than "repaired" into a different name. `+` is a space,
/// as in HTML forms; send `%2B` for a plus sign.
struct QueryParameters {
    private var values: [String: [UInt8]] = [:]

    init(_ query: String?) throws {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = String(validating: try Self.percentDecode(parts[0]), as: UTF8.self) else {
                throw APIError.badRequest("query parameter names must be UTF-8")
            }
            values[key] = parts.count > 1 ? try Self.percentDecode(parts[1]) : []
        }
    }

    /// The value as text, or 400 when it is not UTF-8.
    func string(_ key: String) throws -> String? {
        guard let bytes = values[key] else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw APIError.badRequest("query parameter '\(key)' is not valid UTF-8", code: key == "name" ? "invalid_name" : "bad_request")
        }
        return text
    }

    /// An RFC 3339 time (`modified_at` on uploads), or 400 when it is not one.
    func timestamp(_ key: String) throws -> Timestamp? {
        guard let text = try string(key) else { return nil }
        guard let parsed = Timestamp(rfc3339: text) else {
            throw APIError.badRequest("query parameter '\(key)' is not an RFC 3339 time: \(text.prefix(64))")
        }
        return parsed
    }

    /// The raw bytes of a value (for name validation that reports the exact problem).
    func bytes(_ key: String) -> [UInt8]? { values[key] }

    /// An integer within `range`, or `defaultValue` when absent.
    func integer(_ key: String, in range: ClosedRange<Int>, default defaultValue: Int) throws -> Int {
        guard let text = try string(key) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw APIError.badRequest("'\(key)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// An integer within `range` that must be given: 400 when absent, not a whole number
    /// (the text is parsed, never computed with, before the range check) or out of range.
    func requiredInteger(_ key: String, in range: ClosedRange<Int>) throws -> Int {
        guard try string(key) != nil else {
            throw APIError.badRequest("'\(key)' is required: a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return try integer(key, in: range, default: range.lowerBound)
    }

    private static func percentDecode(_ text: Substring) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw APIError.badRequest("malformed percent escape in the query string")
                }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
