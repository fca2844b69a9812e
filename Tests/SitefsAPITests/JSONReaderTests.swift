import Foundation
import SitefsAPI
import Testing

/// `JSONReader` replaces `JSONDecoder` for listing pages: it must read the same values and
/// refuse the same documents (and, unlike Foundation, malformed values it skips).
@Suite struct JSONReaderTests {
    static let item = WireFormatTests.itemJSON

    /// Both readers on the same bytes: equal values, or both refuse.
    static func readBoth(_ json: [UInt8]) -> (fast: Result<ItemPage, any Error>, foundation: Result<ItemPage, any Error>) {
        (Result { try ItemPage(jsonBytes: json) }, Result { try JSONDecoder().decode(ItemPage.self, from: Data(json)) })
    }

    static let lock = #"{"id":"L1","holder":"anna","holder_name":"Anna Berger","device":"laptop","application":"LibreOffice","created_at":"2026-11-27T10:14:00Z","expires_at":"2026-11-27T10:24:00Z"}"#

    /// The sample item with `"lock": LOCK`.
    static func withLock(_ lock: String) -> String {
        item.replacingOccurrences(of: #""etag":"abc","#, with: #""etag":"abc","lock":\#(lock),"#)
    }

    static func page(_ items: String...) -> String { #"{"items":[\#(items.joined(separator: ","))],"next_cursor":"c2"}"# }

    @Test("reads what JSONDecoder reads, field for field")
    func sameValues() throws {
        let sample = [
            Self.page(Self.item),
            #"{"items":[], "next_cursor":null}"#,
            #"{"items":[]}"#,
            " \n\t{ \"next_cursor\" : \"x\" , \"items\" : [ \(Self.item) ] } \r\n",
            Self.page(Self.item.replacingOccurrences(of: #""parent_id":"3""#, with: #""parent_id":null"#)),
            Self.page(Self.item.replacingOccurrences(of: #""parent_id":"3","#, with: "")),
            Self.page(Self.item.replacingOccurrences(of: #""content_type":"application/vnd.oasis.opendocument.text""#, with: #""content_type":null"#)),
            Self.page(Self.item.replacingOccurrences(of: "Plan.odt", with: #"Pl\"an\\ \/ \b\f\n\r\t \u00e9\u20AC \ud83d\ude00.odt"#)),
            Self.page(Self.item.replacingOccurrences(of: "Plan.odt", with: "Bauplan Übersicht 東京 😀.odt")),
            Self.page(Self.item.replacingOccurrences(of: #""size":1234"#, with: #""size":-9223372036854775808"#)),
            Self.page(Self.item.replacingOccurrences(of: #""size":1234"#, with: #""size":0"#)),
            Self.page(Self.item.replacingOccurrences(
                of: #""future_field":{"x":1}"#,
                with: #""a":[1,-2.5e+3,0.0,1E-2,true,false,null,"s\u0041",{"b":[[]],"c":{}}],"z":-0"#)),
            Self.page(Self.item, Self.item.replacingOccurrences(of: #""id":"7""#, with: #""id":"8""#)),
            // Locks: absent (a server from before locks), null, and one with a field to skip.
            Self.page(Self.withLock("null")),
            Self.page(Self.withLock(Self.lock)),
            Self.page(Self.withLock(Self.lock.replacingOccurrences(of: #""device":"laptop""#, with: #""device":"","later":[1]"#))),
        ]
        for json in sample {
            let (fast, foundation) = Self.readBoth(Array(json.utf8))
            let expected = try foundation.get()
            #expect(try fast.get() == expected, "\(json)")
        }
    }

    @Test("round-trips pages JSONEncoder writes")
    func roundTrip() throws {
        let base = try JSONDecoder().decode(Item.self, from: Data(Self.item.utf8))
        var items: [Item] = []
        for index in 0..<50 {
            var item = base
            item.id = String(index)
            item.name = "name \(index) \u{7}\u{1F}\"\\/é\u{10FFFF}"
            item.parentID = index % 3 == 0 ? nil : "p\(index)"
            item.contentType = index % 2 == 0 ? nil : "text/plain"
            item.size = Int64(index) * 1_000_003
            item.modifiedAt = Timestamp(microsecondsSinceEpoch: 1_790_000_000_000_000 + Int64(index) * 1_234_567)
            items.append(item)
        }
        let page = ItemPage(items: items, nextCursor: "next")
        #expect(try ItemPage(jsonBytes: Array(try JSONEncoder().encode(page))) == page)
    }

    @Test("refuses what JSONDecoder refuses")
    func sameRefusals() {
        let replaced = { (of: String, with: String) in Self.page(Self.item.replacingOccurrences(of: of, with: with)) }
        let broken: [[UInt8]] = [
            "", " ", "{", "[]", "null", #"{"items":[]"#, #"{"items":[]} x"#, #"{"items":[1]}"#,
            #"{"items":null}"#, #"{"next_cursor":null}"#, #"{"items":[],"next_cursor":7}"#, #"{items:[]}"#,
            #"{"items":[]"next_cursor":null}"#, #"{"items":[,]}"#,
            replaced(#""size":1234"#, #""size":"big""#),
            replaced(#""size":1234"#, #""size":01"#),
            replaced(#""size":1234"#, #""size":1.5"#),
            replaced(#""size":1234"#, #""size":99999999999999999999"#),
            replaced(#""size":1234"#, #""size":-"#),
            replaced(#""size":1234"#, #""size":+1"#),
            replaced("Plan.odt", "Pl\tan"),
            replaced("Plan.odt", #"Pl\xan"#),
            replaced("Plan.odt", #"Pl\u00"#),
            replaced("Plan.odt", #"Pl\ud800an"#),
            replaced("Plan.odt", #"Pl\ud800\u0041an"#),
            replaced("Plan.odt", #"Pl\udc00an"#),
            replaced(#""kind":"file""#, #""kind":"junction""#),
            replaced("2026-11-01T10:00:00Z", "Nov 1"),
            replaced(#""etag":"abc","#, ""),
            replaced(#""capabilities":["read","write","rename","delete","teleport"]"#, #""capabilities":"read""#),
            replaced(#""capabilities":["read","write","rename","delete","teleport"]"#, #""capabilities":[1]"#),
            replaced(#""future_field":{"x":1}"#, #""future_field":tru"#),
            replaced(#""future_field":{"x":1}"#, #""future_field":.5"#),
            Self.page(Self.withLock(#""anna""#)),
            Self.page(Self.withLock("{}")),
            Self.page(Self.withLock(Self.lock.replacingOccurrences(of: #""holder":"anna","#, with: ""))),
            Self.page(Self.withLock(Self.lock.replacingOccurrences(of: "2026-11-27T10:24:00Z", with: "soon"))),
            Self.page(Self.withLock(Self.lock.replacingOccurrences(of: #""device":"laptop""#, with: #""device":7"#))),
        ].map { Array($0.utf8) } + [
            // Invalid UTF-8 inside a name: a stray byte, a truncated sequence, an overlong form.
            Array(Self.page(Self.item).utf8).replacing(Array("Plan".utf8), with: [0x50, 0xFF, 0x61]),
            Array(Self.page(Self.item).utf8).replacing(Array("Plan".utf8), with: [0x50, 0xE2, 0x82, 0x61]),
            Array(Self.page(Self.item).utf8).replacing(Array("Plan".utf8), with: [0x50, 0xC0, 0xAF, 0x61]),
            Array(Self.page(Self.item).utf8).replacing(Array("Plan".utf8), with: [0x50, 0xF0, 0x90, 0x80, 0x61]),
            Array(Self.page(Self.item).utf8).replacing(Array("Plan.odt\"".utf8), with: [0x50]),  // unterminated
        ]
        for json in broken {
            let (fast, foundation) = Self.readBoth(json)
            let text = String(decoding: json, as: UTF8.self)
            #expect(throws: (any Error).self, "JSONDecoder accepts \(text)") { try foundation.get() }
            #expect(throws: JSONReader.Error.self, "JSONReader accepts \(text)") { try fast.get() }
        }
    }

    /// Foundation's scanner lets a trailing comma pass, and malformed numbers inside a value
    /// nobody decodes; the reader checks every byte.
    @Test("refuses malformed JSON that Foundation lets pass")
    func malformedJSONFoundationAccepts() {
        var documents = [#"{"items":[],}"#]
        for field in [#"{"x":01}"#, "[1,]", "1.", "-", "1e", #"{"x"}"#, #""\q""#] {
            documents.append(Self.page(Self.item.replacingOccurrences(of: #"{"x":1}"#, with: field)))
        }
        for json in documents {
            #expect(throws: JSONReader.Error.self, "JSONReader accepts \(json)") { try ItemPage(jsonBytes: Array(json.utf8)) }
        }
    }

    @Test("says where a document went wrong")
    func errorOffsets() {
        #expect(throws: JSONReader.Error.self) { try ItemPage(jsonBytes: Array(#"{"items":[]} x"#.utf8)) }
        do {
            _ = try ItemPage(jsonBytes: Array(#"{"items":[],"next_cursor":7}"#.utf8))
            Issue.record("a number as the cursor was accepted")
        } catch {
            #expect(error.offset == 26)  // the 7
            #expect(error.description.contains("expected a string"))
        }
    }

    @Test("refuses nesting deeper than its limit instead of recursing without end")
    func depthLimit() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let json = Self.page(Self.item.replacingOccurrences(of: #"{"x":1}"#, with: deep))
        #expect(throws: JSONReader.Error.self) { try ItemPage(jsonBytes: Array(json.utf8)) }
    }
}
