import Testing
import SitefsHTTP

@Suite struct PercentEncodingTests {
    @Test func keepsOnlyUnreservedCharacters() {
        #expect(PercentEncoding.encodeComponent("AZaz09-._~") == "AZaz09-._~")
        #expect(PercentEncoding.encodeComponent("a b/c?d#e%f+g&h=i") == "a%20b%2Fc%3Fd%23e%25f%2Bg%26h%3Di")
        #expect(PercentEncoding.encodeComponent("") == "")
    }

    @Test func encodesUTF8ByteWise() {
        #expect(PercentEncoding.encodeComponent("é") == "%C3%A9")
        #expect(PercentEncoding.encodeComponent("📄") == "%F0%9F%93%84")
        #expect(PercentEncoding.encodeComponent(utf8: [0x00, 0xff, 0x41]) == "%00%FFA")
    }
}
