/// `DAV:getlastmodified` is an HTTP-date (RFC 4918 §15.7, RFC 9110 §5.6.7): the preferred
/// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") and the two obsolete forms a recipient must
/// still accept, RFC 850 ("Sunday, 06-Nov-94 08:49:37 GMT") and asctime
/// ("Sun Nov  6 08:49:37 1994"). Parsed by hand because the format is fixed and small, and
/// this module stays free of Foundation (see README.md). Every field is range-checked; a
/// value that is not a real date is nil, never a trap.
public enum HTTPDate {
    /// Seconds since 1970-01-01T00:00:00Z, or nil.
    public static func secondsSinceEpoch(_ text: String) -> Int64? {
        if let fast = imfFixdate(Array(text.utf8)) { return fast }
        let fields = text.trimmed.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard fields.count >= 4, fields.allSatisfy({ $0.utf8.count <= 16 }) else { return nil }
        if fields.count == 6, fields[0].hasSuffix(","), fields[5] == "GMT" {
            // IMF-fixdate: day-name, DD Mon YYYY HH:MM:SS GMT
            guard let day = number(fields[1], digits: 2), let month = month(fields[2]),
                  let year = number(fields[3], digits: 4) else { return nil }
            return seconds(year: year, month: month, day: day, time: fields[4])
        }
        if fields.count == 4, fields[0].hasSuffix(","), fields[3] == "GMT" {
            // RFC 850: day-name, DD-Mon-YY HH:MM:SS GMT; a two-digit year more than 50 years
            // ahead is taken as the past century (RFC 9110 §5.6.7).
            let parts = fields[1].split(separator: "-").map(String.init)
            guard parts.count == 3, let day = number(parts[0], digits: 2), let month = month(parts[1]),
                  let short = number(parts[2], digits: 2) else { return nil }
            return seconds(year: short < 70 ? 2000 + short : 1900 + short, month: month, day: day, time: fields[2])
        }
        if fields.count == 5 {
            // asctime: day-name Mon D HH:MM:SS YYYY (the day may be padded with a space)
            guard let month = month(fields[1]), fields[2].utf8.count <= 2, let day = Int(fields[2]),
                  let year = number(fields[4], digits: 4) else { return nil }
            return seconds(year: year, month: month, day: day, time: fields[3])
        }
        return nil
    }

    /// The IMF-fixdate of `seconds` since the epoch (for `If-Modified-Since`), or nil for a
    /// time outside the years 1970...9999.
    public static func format(secondsSinceEpoch seconds: Int64) -> String? {
        guard seconds >= 0, seconds < 253_402_300_800 else { return nil }  // 10000-01-01
        let days = Int(seconds / 86_400), rest = Int(seconds % 86_400)
        let (year, month, day) = civil(fromDays: days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days % 7]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) \(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)) GMT"
    }

    /// The date `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The preferred form at its fixed positions, without splitting into strings: a listing
    /// parses one per entry, 100,000 for a large folder. Nil when the text is not exactly
    /// that form (the general path then decides).
    private static func imfFixdate(_ bytes: [UInt8]) -> Int64? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 32, bytes[7] == 32, bytes[11] == 32, bytes[16] == 32,
              bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 32,
              bytes[26...28].elementsEqual("GMT".utf8),
              let month = monthBytes.firstIndex(where: { $0.elementsEqual(bytes[8...10]) }),
              let day = digits(bytes[5...6]), let year = digits(bytes[12...15]), let hour = digits(bytes[17...18]),
              let minute = digits(bytes[20...21]), let second = digits(bytes[23...24])
        else { return nil }
        return seconds(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second)
    }

    private static let monthBytes = months.map { Array($0.utf8) }

    private static func digits(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard (48...57).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name).map { $0 + 1 }
    }

    /// Exactly `digits` ASCII digits.
    private static func number(_ text: String, digits: Int) -> Int? {
        guard text.utf8.count == digits, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(text)
    }

    private static func seconds(year: Int, month: Int, day: Int, time: String) -> Int64? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let hour = number(parts[0], digits: 2), let minute = number(parts[1], digits: 2),
              let second = number(parts[2], digits: 2)
        else { return nil }
        return seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    private static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64? {
        guard hour < 24, minute < 60, second <= 60,  // 60: a leap second
              (1...12).contains(month), (1...daysIn(month, of: year)).contains(day), (1900...9999).contains(year)
        else { return nil }
        let days = daysFromEpoch(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59))
    }

    private static func daysIn(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date (proleptic Gregorian; Howard Hinnant's days_from_civil).
    private static func daysFromEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
