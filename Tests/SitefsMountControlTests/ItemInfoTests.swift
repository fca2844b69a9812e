import Foundation
import SitefsMountControl
import Testing

/// `sitefs info`: aligned lines for a person (sizes human and exact, times local), what the
/// daemon does not have left out, server text escaped; the same as JSON.
@Suite struct ItemInfoTests {
    static let full = ItemInfo(path: "/m/Harbour Tower/plan.odt", kind: "file", size: 12_288, attributes: [
        "state": "online-only", "id": "0FVhTf1kzA4wWgk8Qx7c-w", "version": "9f86d081884c7d659a2feaa0c55ad015",
        "created_at": "2026-11-01T08:00:00Z", "created_by": "anna", "modified_at": "2026-11-27T10:14:03.5Z",
        "modified_by": "Anna Berger", "version_count": "4", "lock": "Ben on desk-2 since 2026-11-27T10:20:00Z",
    ])

    @Test func everythingKnownIsShownAligned() {
        #expect(Self.full.lines(HumanText(timeZone: TimeZone(identifier: "UTC")!)) == [
            "Name:        plan.odt",
            "Path:        /m/Harbour Tower/plan.odt",
            "Kind:        file",
            "Size:        12.0 KiB (12,288 bytes)",
            "State:       online-only",
            "Created:     2026-11-01 08:00:00",
            "Created by:  anna",
            "Modified:    2026-11-27 10:14:03",
            "Modified by: Anna Berger",
            "Versions:    4",
            "Locked:      Ben on desk-2 since 2026-11-27T10:20:00Z",
            "Server id:   0FVhTf1kzA4wWgk8Qx7c-w",
            "Version:     9f86d081884c7d659a2feaa0c55ad015",
        ])
    }

    /// An older daemon or a WebDAV mount: what is missing is left out; a folder has no size;
    /// a count that is no count is no count.
    @Test func whatTheDaemonDoesNotHaveIsLeftOut() {
        let folder = ItemInfo(path: "/m/Harbour Tower/Plans", kind: "folder", size: 4096,
                              attributes: ["state": "online-only", "id": "", "version_count": "many", "created_by": "evil\u{1B}[2J"])
        #expect(folder.lines(HumanText(timeZone: TimeZone(identifier: "UTC")!)) == [
            "Name:       Plans",
            "Path:       /m/Harbour Tower/Plans",
            "Kind:       folder",
            "State:      online-only",
            "Created by: evil\\u{1b}[2J",
            "Server id:  none yet (not on the server yet)",
        ])
        #expect(folder.versionCount == nil)
    }

    @Test func theJSONLeavesOutWhatIsMissingAndCountsAsNumbers() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(Self.full.json().utf8)) as? [String: Any])
        #expect(document["version_count"] as? Int == 4 && document["size"] as? Int == 12_288)
        #expect(document["modified_at"] as? String == "2026-11-27T10:14:03.5Z" && document["name"] as? String == "plan.odt")
        let sparse = ItemInfo(path: "/m/S", kind: "folder", size: 0, attributes: ["state": "online-only"])
        let keys = Set((try JSONSerialization.jsonObject(with: Data(sparse.json().utf8)) as? [String: Any] ?? [:]).keys)
        #expect(keys == ["path", "name", "kind", "state"])
    }
}
