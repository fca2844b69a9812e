import Foundation
import SitefsAPI
import Testing

@Suite struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0)),
        ("1970-01-01T00:00:00.000001Z", 1),
        ("2026-11-22T08:15:30.123456Z", 1_795_335_330_123_456),
        ("2026-11-22T08:15:30.123Z", 1_795_335_330_123_000),
        ("2026-11-22T08:15:30Z", 1_795_335_330_000_000),
        ("2026-11-22T10:15:30.5+02:00", 1_795_335_330_500_000),
        ("2026-11-22t08:15:30.123456789z", 1_795_335_330_123_456),
        ("2026-11-22 03:15:30-05:00", 1_795_335_330_000_000),
        ("2000-02-29T12:00:00Z", 951_825_600_000_000),
        ("1969-12-31T23:59:59.999999Z", -1),
    ])
    func parses(text: String, micros: Int64) throws {
        let parsed = try #require(Timestamp(rfc3339: text))
        #expect(parsed.microseconds == micros)
    }

    @Test(arguments: ["", "2026-11-22", "2026-11-22T08:15:30", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                      "2025-02-29T00:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T08:15:30.Z", "2026-11-22T08:15:30+0200",
                      "2026-11-22T08:15:30Zjunk", "yesterday"])
    func rejects(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func formatsWithMicrosecondsInUTCAndRoundTrips() throws {
        #expect(Timestamp(microsecondsSinceEpoch: 1_795_335_330_123_456).rfc3339 == "2026-11-22T08:15:30.123456Z")
        #expect(Timestamp(microsecondsSinceEpoch: -1).rfc3339 == "1969-12-31T23:59:59.999999Z")
        // Every day across leap years and centuries survives format -> parse.
        for day in stride(from: Int64(-719_162), through: 2_932_896, by: 997) {  // years 0001...9999
            let value = Timestamp(microsecondsSinceEpoch: day * 86_400_000_000 + 45_296_789_012)
            #expect(Timestamp(rfc3339: value.rfc3339) == value, "\(value.rfc3339)")
        }
    }

    @Test func agreesWithFoundation() throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        for seconds in [0, 951_825_600, 1_795_335_330, 4_102_444_800] {
            let ours = Timestamp(microsecondsSinceEpoch: Int64(seconds) * 1_000_000).rfc3339
            let theirs = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            #expect(ours.replacingOccurrences(of: ".000000", with: "") == theirs)
        }
    }

    @Test func codesAsJSONString() throws {
        let value = Timestamp(microsecondsSinceEpoch: 1_795_335_330_123_456)
        let data = try JSONEncoder().encode([value])
        #expect(String(decoding: data, as: UTF8.self) == #"["2026-11-22T08:15:30.123456Z"]"#)
        #expect(try JSONDecoder().decode([Timestamp].self, from: data) == [value])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Timestamp].self, from: Data(#"["soon"]"#.utf8)) }
    }

    @Test func timespecPartsFloorTowardsNegativeInfinity() {
        #expect(Timestamp(microsecondsSinceEpoch: 1_500_000).timespecParts == (1, 500_000_000))
        #expect(Timestamp(microsecondsSinceEpoch: -1).timespecParts == (-1, 999_999_000))
    }
}
