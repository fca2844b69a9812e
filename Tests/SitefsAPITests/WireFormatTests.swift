import Foundation
import SitefsAPI
import Testing

@Suite struct WireFormatTests {
    static let itemJSON = #"""
    {"id":"7","parent_id":"3","site_id":"1","name":"Plan.odt","kind":"file","size":1234,
     "content_type":"application/vnd.oasis.opendocument.text","created_at":"2026-11-01T10:00:00Z",
     "modified_at":"2026-11-02T11:30:15.250Z","created_by":"anna","modified_by":"ben","etag":"abc",
     "capabilities":["read","write","rename","delete","teleport"],"future_field":{"x":1}}
    """#

    @Test func itemsDecodeTolerantlyAndRoundTrip() throws {
        let item = try JSONDecoder().decode(Item.self, from: Data(Self.itemJSON.utf8))
        #expect(item.capabilities == [.read, .write, .rename, .delete])  // unknown capability ignored
        #expect(item.modifiedAt == Timestamp(rfc3339: "2026-11-02T11:30:15.25Z"))
        let again = try JSONDecoder().decode(Item.self, from: JSONEncoder().encode(item))
        #expect(again == item)
    }

    @Test func sitesEncodeAnExplicitNullParentAndPagesAnExplicitNullCursor() throws {
        var item = try JSONDecoder().decode(Item.self, from: Data(Self.itemJSON.utf8))
        item.parentID = nil
        let page = String(decoding: try JSONEncoder().encode(ItemPage(items: [item], nextCursor: nil)), as: UTF8.self)
        #expect(page.contains(#""parent_id":null"#))
        #expect(page.contains(#""next_cursor":null"#))
    }

    @Test func changesDecodeBothShapes() throws {
        let json = #"{"changes":[{"deleted":"9","site_id":"1"},{"item":\#(Self.itemJSON)}],"next_cursor":"c","has_more":false}"#
        let page = try JSONDecoder().decode(ChangePage.self, from: Data(json.utf8))
        #expect(page.changes.first == .deleted(id: "9", siteID: "1"))
        guard case .item(let item) = page.changes.last else { Issue.record("expected an item"); return }
        #expect(item.name == "Plan.odt")
    }

    /// An item's lock: absent or null is none; one written is read back the same.
    @Test func locksRoundTripAndAbsentMeansNone() throws {
        var item = try JSONDecoder().decode(Item.self, from: Data(Self.itemJSON.utf8))
        #expect(item.lock == nil)
        #expect(String(decoding: try JSONEncoder().encode(item), as: UTF8.self).contains(#""lock":null"#))
        item.lock = ItemLock(id: "L1", holder: "anna", holderName: "Anna Berger", device: "laptop", application: "LibreOffice",
                             createdAt: Timestamp(microsecondsSinceEpoch: 1_790_000_000_000_001),
                             expiresAt: Timestamp(microsecondsSinceEpoch: 1_790_000_600_000_001))
        let encoded = try JSONEncoder().encode(item)
        #expect(try JSONDecoder().decode(Item.self, from: encoded) == item)
        #expect(try Item(jsonBytes: Array(encoded)) == item)
        let refusal = ErrorResponse(code: "locked", message: "locked for editing by Anna Berger", lock: item.lock)
        #expect(try JSONDecoder().decode(ErrorResponse.self, from: JSONEncoder().encode(refusal)) == refusal)
    }

    @Test func malformedItemsFailToDecode() {
        for broken in [#"{"id":"1"}"#, Self.itemJSON.replacingOccurrences(of: #""kind":"file""#, with: #""kind":"junction""#),
                       Self.itemJSON.replacingOccurrences(of: #""size":1234"#, with: #""size":"big""#),
                       Self.itemJSON.replacingOccurrences(of: "2026-11-01T10:00:00Z", with: "Nov 1")] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(Item.self, from: Data(broken.utf8)) }
        }
    }
}
