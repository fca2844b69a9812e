/// A point in time with microsecond precision, as the API carries it.
///
/// The wire form is RFC 3339 (`2026-11-22T08:15:30.123456Z`). Parsing is tolerant of what
/// servers and people actually send (no fraction, 1-9 fraction digits, `Z` or a numeric
/// offset, `t`/space as the separator); formatting always writes six fraction digits in
/// UTC so that a value read back compares equal to the one written. Our own calendar code
/// keeps this off Foundation's formatters, which differ between platforms and only keep
/// milliseconds.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public var microseconds: Int64

    public init(microsecondsSinceEpoch: Int64) {
        self.microseconds = microsecondsSinceEpoch
    }

    public init(secondsSinceEpoch: Double) {
        self.microseconds = Int64((secondsSinceEpoch * 1_000_000).rounded())
    }

    /// Seconds and nanoseconds, as `struct timespec` wants them.
    public var timespecParts: (seconds: Int64, nanoseconds: Int64) {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        return (seconds, (microseconds - seconds * 1_000_000) * 1_000)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.microseconds < rhs.microseconds }

    public var description: String { rfc3339 }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let parsed = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "not an RFC 3339 timestamp: \(text.prefix(64))")
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}

extension Timestamp {
    /// The current time.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(microsecondsSinceEpoch: Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1_000)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
