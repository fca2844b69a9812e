import Foundation

/// Times and sizes as a person reads them: local time to the second, sizes in binary units
/// with one decimal (as `sitefs status` shows them).
public struct HumanText: Sendable {
    public let timeZone: TimeZone

    public init(timeZone: TimeZone = .current) {
        self.timeZone = timeZone
    }

    /// `2026-11-27 11:14:03` in `timeZone`, from RFC 3339 text; the text itself (escaped by
    /// the caller) when it is no time.
    public func localTime(_ rfc3339: String) -> String {
        guard let date = Self.date(rfc3339) else { return rfc3339 }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    /// RFC 3339 with or without fractional seconds.
    public static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    /// `812 B`, `12.0 KiB`, `3.4 MiB`, ...
    public static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes), unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// `12.0 KiB (12,288 bytes)`; `812 bytes` alone below a KiB.
    public static func sizeWithBytes(_ bytes: Int64) -> String {
        let exact = grouped(bytes) + (bytes == 1 ? " byte" : " bytes")
        return bytes < 1024 ? exact : "\(size(bytes)) (\(exact))"
    }

    /// `12,288`: thousands separated by commas, whatever the locale (stable output).
    static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return (value < 0 ? "-" : "") + result
    }
}
