import Testing
import SitefsCrypto

/// RFC 4231 §4 test cases for HMAC-SHA256 (case 5 is a truncated-output case and is
/// not applicable to a full-length MAC).
@Suite struct HMACTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let key: [UInt8]
        let data: [UInt8]
        let mac: String
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(
            name: "RFC 4231 case 1",
            key: [UInt8](repeating: 0x0b, count: 20),
            data: bytes("Hi There"),
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        Vector(
            name: "RFC 4231 case 2 (short key)",
            key: bytes("Jefe"),
            data: bytes("what do ya want for nothing?"),
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        Vector(
            name: "RFC 4231 case 3",
            key: [UInt8](repeating: 0xaa, count: 20),
            data: [UInt8](repeating: 0xdd, count: 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        Vector(
            name: "RFC 4231 case 4",
            key: Array(1...25),
            data: [UInt8](repeating: 0xcd, count: 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        Vector(
            name: "RFC 4231 case 6 (131-byte key)",
            key: [UInt8](repeating: 0xaa, count: 131),
            data: bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        Vector(
            name: "RFC 4231 case 7 (131-byte key, long data)",
            key: [UInt8](repeating: 0xaa, count: 131),
            data: bytes(
                "This is a test using a larger than block-size key and a larger than block-size data. "
                    + "The key needs to be hashed before being used by the HMAC algorithm."
            ),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ]

    @Test(arguments: vectors)
    func rfc4231(_ vector: Vector) {
        #expect(Hex.encode(HMACSHA256.authenticationCode(key: vector.key, message: vector.data)) == vector.mac)
    }

    /// A 64-byte key is used as is and a 65-byte key is hashed first: both edges of the
    /// RFC 2104 key rule, checked against the definition computed with plain SHA-256.
    @Test(arguments: [0, 1, 63, 64, 65, 200])
    func matchesDefinitionAtKeyLengthEdges(keyLength: Int) {
        let key = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let message = bytes("sitefs session token")
        var k = key.count > 64 ? SHA256.hash(key) : key
        k += [UInt8](repeating: 0, count: 64 - k.count)
        let inner = SHA256.hash(k.map { $0 ^ 0x36 } + message)
        let expected = SHA256.hash(k.map { $0 ^ 0x5c } + inner)
        #expect(HMACSHA256.authenticationCode(key: key, message: message) == expected)
    }
}
