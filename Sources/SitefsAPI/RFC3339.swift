/// RFC 3339 formatting and parsing for `Timestamp`, on a proleptic Gregorian calendar.
extension Timestamp {
    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
    public var rfc3339: String {
        let (seconds, nanos) = timespecParts
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilDate.fromDays(days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
            + "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
            + ".\(pad(nanos / 1_000, 6))Z"
    }

    /// Parses an RFC 3339 date-time; nil for anything else. Fractions beyond microseconds
    /// are truncated; leap seconds (`:60`) are folded into the next second's start.
    public init?(rfc3339 text: String) {
        var scanner = DigitScanner(Array(text.utf8))
        guard let year = scanner.number(digits: 4), scanner.skip("-"),
              let month = scanner.number(digits: 2), scanner.skip("-"),
              let day = scanner.number(digits: 2),
              scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
              let hour = scanner.number(digits: 2), scanner.skip(":"),
              let minute = scanner.number(digits: 2), scanner.skip(":"),
              let second = scanner.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
              hour < 24, minute < 60, second <= 60
        else { return nil }
        var micros: Int64 = 0
        if scanner.skip(".") {
            var count = 0
            while let digit = scanner.digit() {
                if count < 6 { micros = micros * 10 + digit }
                count += 1
            }
            guard count > 0 else { return nil }
            if count < 6 { for _ in count..<6 { micros *= 10 } }
        }
        var offsetSeconds: Int64 = 0
        if scanner.skip("Z") || scanner.skip("z") {
        } else if let sign = scanner.sign() {
            guard let offHours = scanner.number(digits: 2), scanner.skip(":"),
                  let offMinutes = scanner.number(digits: 2), offHours < 24, offMinutes < 60
            else { return nil }
            offsetSeconds = sign * (offHours * 3600 + offMinutes * 60)
        } else {
            return nil
        }
        guard scanner.atEnd else { return nil }
        let days = CivilDate.toDays(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        self.init(microsecondsSinceEpoch: seconds * 1_000_000 + micros)
    }
}

/// Days since 1970-01-01 <-> civil dates (the well-known era-based algorithm).
enum CivilDate {
    static func toDays(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func fromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// A cursor over ASCII bytes for the fixed-width fields of RFC 3339.
struct DigitScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func digit() -> Int64? {
        guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
        defer { index += 1 }
        return Int64(bytes[index] - 0x30)
    }

    mutating func number(digits: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<digits {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    mutating func skip(_ character: Unicode.Scalar) -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(character.value) else { return false }
        index += 1
        return true
    }

    mutating func sign() -> Int64? {
        if skip("+") { return 1 }
        if skip("-") { return -1 }
        return nil
    }
}
