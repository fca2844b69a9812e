import Testing
import SitefsCrypto

@Suite struct OpaqueNumberTests {
    static let key = (0..<32).map { UInt8($0) }

    /// Known answers computed independently (Python's `cryptography`: AES-256-ECB of the
    /// big-endian number and the tag `sitefs:1`, under HMAC-SHA256(key, "opaque-number:item")).
    @Test(arguments: [(Int64(1), "9ot-D1Tza6L7_vj2YDtKJw"), (42, "SDKXUPGjmY4FadEhVGuNKg"),
                      (Int64.max, "y8ZrZbebIJTRM9VBLH9aMg")])
    func knownAnswers(number: Int64, token: String) {
        let cipher = OpaqueNumber(key: Self.key, domain: "item")
        #expect(cipher.token(for: number) == token)
        #expect(cipher.number(for: token) == number)
    }

    @Test func roundTripsAndShowsNoOrder() {
        let cipher = OpaqueNumber(key: SecureRandom.bytes(count: 32), domain: "item")
        let tokens = (1...64).map { cipher.token(for: Int64($0)) }
        for (index, token) in tokens.enumerated() {
            #expect(token.utf8.count == OpaqueNumber.tokenLength)
            #expect(cipher.number(for: token) == Int64(index + 1))
        }
        #expect(Set(tokens.map { $0.prefix(4) }).count == tokens.count)
        #expect(tokens.sorted() != tokens)
    }

    /// Another key, another domain, an altered or re-spelled token: refused, never read as
    /// some other number.
    @Test func refusesWhatItDidNotMake() {
        let cipher = OpaqueNumber(key: Self.key, domain: "item")
        let token = cipher.token(for: 42)
        #expect(OpaqueNumber(key: Self.key, domain: "version").number(for: token) == nil)
        #expect(OpaqueNumber(key: Array(Self.key.reversed()), domain: "item").number(for: token) == nil)
        var altered = Array(token)
        altered[3] = altered[3] == "A" ? "B" : "A"
        #expect(cipher.number(for: String(altered)) == nil)
        for bad in ["", "42", token + "A", String(token.dropLast()), token + "==", " " + token.dropFirst(),
                    String(token.dropLast()) + "x"] {
            #expect(cipher.number(for: bad) == nil, "\(bad)")
        }
    }
}
