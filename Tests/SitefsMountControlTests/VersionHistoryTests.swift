import Foundation
import SitefsCrypto
import SitefsMountControl
import Testing

/// Short version ids (SHA-256 prefixes, grown until unique), what a VERSION argument
/// resolves to, and the table and messages a person reads.
@Suite struct VersionHistoryTests {
    static func version(_ id: String, at time: String = "2026-11-27T10:14:03Z", by author: String? = "anna", size: Int64 = 12_288,
                        current: Bool = false) -> StoredVersion {
        StoredVersion(id: id, modifiedAt: time, modifiedBy: author, size: size, current: current)
    }

    static func sha(_ id: String) -> String { Hex.encode(SHA256.hash(Array(id.utf8))) }

    static let three = VersionHistory([
        version("e3", at: "2026-11-27T10:14:03Z", by: "Anna Berger", current: true),
        version("e2", at: "2026-11-26T09:00:00.123456Z", by: "ben", size: 812),
        version("e1", at: "2026-11-01T08:00:00Z", by: nil, size: 3_500_000),
    ])

    @Test func shortIDsAreEightHexDigitsOfTheIDsSHA256() {
        #expect(Self.three.shortLength == 8)
        #expect(Self.three.shortID(at: 0) == String(Self.sha("e3").prefix(8)))
        #expect(Self.three.shortID(at: 2) == String(Self.sha("e1").prefix(8)))
    }

    /// Ids whose hashes share a prefix (found by search; from 2 digits up, since a shared 8
    /// would take billions of tries): the short ids grow until no two are the same, one
    /// length for all; two equal ids never part, and the growing stops at the whole hash.
    @Test func shortIDsGrowUntilUnique() throws {
        let prefix = Self.sha("v0").prefix(3)
        let second = try #require((1..<200_000).lazy.map { "v\($0)" }.first { Self.sha($0).hasPrefix(prefix) })
        let shared = zip(Self.sha("v0"), Self.sha(second)).prefix { $0 == $1 }.count
        let history = VersionHistory([Self.version("v0"), Self.version("x"), Self.version(second)], shortest: 2)
        #expect(history.shortLength == shared + 1)
        #expect(history.shortID(at: 0) != history.shortID(at: 2))
        #expect(history.shortID(at: 1).count == shared + 1)
        #expect(VersionHistory([Self.version("same"), Self.version("same")]).shortLength == 64)
    }

    @Test func aVersionIsNamedByShortIDFullIDOrStepsBack() throws {
        let history = Self.three
        #expect(try history.resolve(history.shortID(at: 1)) == 1)
        #expect(try history.resolve(String(Self.sha("e1").prefix(5)).uppercased()) == 2, "any unique prefix of 4 or more, any case")
        #expect(try history.resolve("e2") == 1, "a full id")
        #expect(try history.resolve("-1") == 1)
        #expect(try history.resolve("-2") == 2)
        #expect(throws: VersionChoiceError.notThatManyBack(3, available: 2)) { try history.resolve("-3") }
        for bad in ["-0", "-x", "--1", "-01", "-"] {
            #expect(throws: VersionChoiceError.badBackCount(bad)) { try history.resolve(bad) }
        }
        #expect(throws: VersionChoiceError.unknown(String(Self.sha("e1").prefix(3)))) { try history.resolve(String(Self.sha("e1").prefix(3))) }
        #expect(throws: VersionChoiceError.unknown("zzzzzzzz")) { try history.resolve("zzzzzzzz") }
        #expect(throws: VersionChoiceError.noVersions) { try VersionHistory([]).resolve("-1") }
    }

    /// "-N" counts back from the version marked current, wherever it is in the list.
    @Test func stepsBackCountFromTheCurrentVersion() throws {
        let history = VersionHistory([Self.version("e3"), Self.version("e2", current: true), Self.version("e1")])
        #expect(try history.resolve("-1") == 2)
        #expect(throws: VersionChoiceError.notThatManyBack(2, available: 1)) { try history.resolve("-2") }
    }

    @Test func twoVersionsSharingATypedPrefixAreAmbiguous() throws {
        // Ids whose hashes share their first 4 hex digits.
        let prefix = Self.sha("a0").prefix(4)
        let other = try #require((1..<2_000_000).lazy.map { "a\($0)" }.first { Self.sha($0).hasPrefix(prefix) })
        let history = VersionHistory([Self.version("a0", current: true), Self.version(other)])
        #expect(throws: VersionChoiceError.ambiguous(String(prefix), candidates: [history.shortID(at: 0), history.shortID(at: 1)])) {
            try history.resolve(String(prefix))
        }
    }

    @Test func theTableShowsLocalTimesAuthorsSizesAndTheCurrentOne() {
        let lines = Self.three.table(HumanText(timeZone: TimeZone(identifier: "Europe/Vienna")!))
        let ids = (0..<3).map { Self.three.shortID(at: $0) }
        #expect(lines == [
            "VERSION   MODIFIED             BY               SIZE",
            "\(ids[0])  2026-11-27 11:14:03  Anna Berger  12.0 KiB  (current)",
            "\(ids[1])  2026-11-26 10:00:00  ben             812 B",
            "\(ids[2])  2026-11-01 09:00:00  -             3.3 MiB",
        ])
    }

    @Test func authorsAreEscapedAndCut() {
        let history = VersionHistory([Self.version("e1", by: "evil\u{1B}[2J" + String(repeating: "x", count: 60), current: true)])
        let row = history.table(HumanText(timeZone: TimeZone(identifier: "UTC")!))[1]
        #expect(!row.contains("\u{1B}"))
        #expect(row.contains("evil\\u{1b}[2J") && row.contains("…"))
    }

    @Test func theRestoreMessageNamesTheVersion() {
        let text = HumanText(timeZone: TimeZone(identifier: "UTC")!)
        #expect(Self.three.restoredMessage(file: "plan.odt", index: 1, text)
                == "restored plan.odt to version \(Self.three.shortID(at: 1)) of 2026-11-26 09:00:00 by ben; it is now the newest version")
        #expect(Self.three.restoredMessage(file: "a\nb", index: 2, text).hasPrefix("restored a\\nb to version"))
        #expect(!Self.three.restoredMessage(file: "plan.odt", index: 2, text).contains(" by "), "no author known")
    }

    @Test func theJSONCarriesShortAndFullIDs() throws {
        let document = try JSONSerialization.jsonObject(with: Data(Self.three.json().utf8)) as? [String: Any]
        let versions = try #require(document?["versions"] as? [[String: Any]])
        #expect(versions.count == 3)
        #expect(versions[0]["id"] as? String == "e3" && versions[0]["short"] as? String == Self.three.shortID(at: 0))
        #expect(versions[0]["current"] as? Bool == true && versions[2]["modified_by"] is NSNull)
    }

    @Test func sizesAndTimesForPeople() {
        #expect(HumanText.size(812) == "812 B")
        #expect(HumanText.size(12_288) == "12.0 KiB")
        #expect(HumanText.sizeWithBytes(12_288) == "12.0 KiB (12,288 bytes)")
        #expect(HumanText.sizeWithBytes(1) == "1 byte")
        #expect(HumanText.sizeWithBytes(1_234_567_890) == "1.1 GiB (1,234,567,890 bytes)")
        let text = HumanText(timeZone: TimeZone(identifier: "America/New_York")!)
        #expect(text.localTime("2026-07-01T12:00:00.5Z") == "2026-07-01 08:00:00")
        #expect(text.localTime("not a time") == "not a time")
    }
}

/// What each errno of a refused restore tells the person.
@Suite struct RestoreRefusalTests {
    @Test func eachErrnoSaysWhatToDo() {
        #expect(RestoreRefusal.reason(errno: ENOENT) == "the server has no such version of it (any more)")
        #expect(RestoreRefusal.reason(errno: EBUSY).contains("locked for editing by someone else"))
        for code in [EROFS, EACCES, EPERM] { #expect(RestoreRefusal.reason(errno: code).hasPrefix("you may not change it")) }
        for code in [EHOSTDOWN, EIO] { #expect(RestoreRefusal.reason(errno: code).contains("try again later")) }
        #expect(RestoreRefusal.reason(errno: ENOTSUP) == "this server keeps no versions")
        #expect(RestoreRefusal.reason(errno: ENOSPC) == String(cString: strerror(ENOSPC)))
    }
}
