import Foundation
import HTTPTypes
import SitefsAPI
import SitefsHTTPBackend
import SitefsProvider
import Testing

/// Locks in server responses are checked like everything else, but a lock that cannot be
/// shown refuses nothing else: the item stands without it, and the page says why.
@Suite struct LockValidationTests {
    static func item(lock: String) -> String {
        #"{"id":"7","parent_id":"1","site_id":"1","name":"Plan.odt","kind":"file","size":2,"content_type":null,"created_at":"2026-11-01T10:00:00Z","modified_at":"2026-11-01T10:00:00Z","created_by":"a","modified_by":"a","etag":"e","capabilities":["read"],"lock":\#(lock)}"#
    }

    static func lock(id: String = "L1", holderName: String = "Anna Berger", device: String = "laptop",
                     created: String = "2026-11-01T10:00:00Z", expires: String = "2026-11-01T10:10:00Z") -> String {
        #"{"id":"\#(id)","holder":"anna","holder_name":"\#(holderName)","device":"\#(device)","application":"LibreOffice","created_at":"\#(created)","expires_at":"\#(expires)"}"#
    }

    @Test func aGoodLockIsShownNotHeldHere() async throws {
        try await withCraftedServer(body: #"{"items":[\#(Self.item(lock: Self.lock()))],"next_cursor":null}"#) { backend in
            let page = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10)
            let lock = try #require(page.items.first?.lock)
            #expect(lock.holder == "anna" && lock.holderName == "Anna Berger" && lock.device == "laptop" && !lock.heldHere)
            #expect(lock.expires == Timestamp(rfc3339: "2026-11-01T10:10:00Z"))
            #expect(page.refused.isEmpty)
        }
    }

    @Test(arguments: [
        lock(created: "2026-11-01T10:10:00Z", expires: "2026-11-01T10:00:00Z"),  // ends before it began
        lock(device: String(repeating: "x", count: 300)),
        lock(holderName: #"Anna\u001b[2J"#),
        lock(id: ""),
        lock(created: "1969-12-31T23:59:59Z"),
    ])
    func anUnusableLockIsLeftOutAndTheItemStays(lock: String) async throws {
        try await withCraftedServer(body: #"{"items":[\#(Self.item(lock: lock))],"next_cursor":null}"#) { backend in
            let page = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10)
            #expect(page.items.map(\.name) == ["Plan.odt"])
            #expect(page.items.first?.lock == nil)
            #expect(page.refused.count == 1 && page.refused[0].contains("lock"), "\(page.refused)")
        }
        try await withCraftedServer(body: Self.item(lock: lock)) { backend in
            let item = try backend.item(ItemIdentifier(site: "1", id: "7"))
            #expect(item.name == "Plan.odt" && item.lock == nil)
        }
    }

    /// A lock of the wrong shape is malformed JSON like any other field: the item is refused.
    @Test func aLockOfTheWrongShapeFailsTheItem() async throws {
        try await withCraftedServer(body: #"{"items":[\#(Self.item(lock: #""anna""#))],"next_cursor":null}"#) { backend in
            #expect(throws: ProviderError.self) { _ = try backend.children(of: ItemIdentifier(site: "1", id: "1"), after: nil, limit: 10) }
        }
    }

    /// 423 names the holder when the body's lock can be shown, and nobody when it cannot.
    @Test func a423NamesTheHolderWhenItCan() async throws {
        let cases: [(String, String?)] = [
            (#"{"error":{"code":"locked","message":"m"},"lock":\#(Self.lock())}"#, "Anna Berger"),
            (#"{"error":{"code":"locked","message":"m"},"lock":\#(Self.lock(id: ""))}"#, nil),
            (#"{"error":{"code":"locked","message":"m"}}"#, nil),
            ("not json", nil),
        ]
        for (body, holder) in cases {
            try await withCraftedServer(status: .init(code: 423), body: body) { backend in
                do {
                    _ = try backend.item(ItemIdentifier(site: "1", id: "7"))
                    Issue.record("423 was accepted")
                } catch ProviderError.locked(let lock) {
                    #expect(lock?.holderName == holder, "\(body)")
                    #expect(lock?.heldHere != true)
                }
            }
        }
    }
}
