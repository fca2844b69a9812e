import Testing
import SitefsCrypto

@Suite struct HexTests {
    @Test func encodesLowercase() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]) == "00017f80abff")
    }

    @Test func roundTripsAllByteValues() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(all)) == all)
        #expect(Hex.decode("DEADbeef") == [0xde, 0xad, 0xbe, 0xef])
        #expect(Hex.decode("") == [])
    }

    @Test(arguments: ["0", "abc", "0g", "g0", "0x00", " 00", "00 ", "zz", "-1", "é0"])
    func rejectsInvalid(_ input: String) {
        #expect(Hex.decode(input) == nil)
    }
}

@Suite struct Base64URLTests {
    /// RFC 4648 §10 vectors, translated to the URL alphabet without padding.
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
        ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64URL.encode(bytes(plain)) == encoded)
        #expect(Base64URL.decode(encoded) == bytes(plain))
    }

    @Test func usesUrlSafeAlphabet() {
        // 0xfb 0xff 0xbf is "+/+/" in standard base64.
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
    }

    @Test func roundTripsEveryLength() {
        for length in 0...70 {
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 200) }
            let encoded = Base64URL.encode(data)
            #expect(!encoded.contains("="))
            #expect(Base64URL.decode(encoded) == data, "length \(length)")
        }
        let random = SecureRandom.bytes(count: 1000)
        #expect(Base64URL.decode(Base64URL.encode(random)) == random)
    }

    @Test(arguments: [
        "Zg==",      // padding is not accepted
        "Zm9v+g",    // standard-alphabet characters
        "Zm9v/g",
        "Zm 9v",     // whitespace
        "Zm9v\n",
        "Z",         // impossible length (1 mod 4)
        "Zm9vY",
        "Zh",        // non-zero unused bits: only "Zg" encodes "f"
        "Zm9",       // only "Zm8" encodes "fo"
        "Zm9vYé",
    ])
    func rejectsInvalid(_ input: String) {
        #expect(Base64URL.decode(input) == nil)
    }
}
