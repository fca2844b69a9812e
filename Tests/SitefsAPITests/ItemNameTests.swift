import SitefsAPI
import Testing

@Suite struct ItemNameTests {
    @Test func acceptsOrdinaryAndUnusualNames() throws {
        for name in ["a", "Report.odt", ".hidden", "...", "name with spaces", "työmaa ✓", String(repeating: "x", count: 255),
                     ".~lock.Plan.odt#", "4913", "lu123.tmp"] {
            #expect(ItemName.violation(of: name) == nil, "\(name)")
        }
    }

    @Test func rejectsWithTheReason() {
        #expect(ItemName.violation(of: "") == .empty)
        #expect(ItemName.violation(of: ".") == .dotOrDotDot)
        #expect(ItemName.violation(of: "..") == .dotOrDotDot)
        #expect(ItemName.violation(of: "a/b") == .containsSlash)
        #expect(ItemName.violation(of: "a\u{0}b") == .containsNUL)
        #expect(ItemName.violation(of: String(repeating: "é", count: 128)) == .tooLong(bytes: 256))
        #expect(throws: ItemName.Violation.invalidUTF8) { try ItemName.validate(utf8: [0x61, 0xFF]) }
        #expect(throws: ItemName.Violation.invalidUTF8) { try ItemName.validate(utf8: [0xC3]) }  // truncated sequence
        #expect(ItemName.Violation.tooLong(bytes: 300).description.contains("255"))
    }
}
