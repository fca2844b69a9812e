import Testing
import SitefsCrypto

/// PBKDF2-HMAC-SHA256 known-answer tests: the widely published SHA-256 counterparts of
/// the RFC 6070 (SHA-1) inputs, and the RFC 7914 §11 vector. All expected values were
/// also cross-checked against OpenSSL via Python's hashlib.pbkdf2_hmac.
@Suite struct PBKDF2Tests {
    @Test(arguments: [
        (1, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
        (2, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
        (4096, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
    ])
    func passwordSalt(iterations: Int, expected: String) {
        let derived = PBKDF2.sha256(password: bytes("password"), salt: bytes("salt"), iterations: iterations, derivedKeyLength: 32)
        #expect(Hex.encode(derived) == expected)
    }

    /// Longer password and salt, and a 40-byte key: two output blocks, the second truncated.
    @Test func longInputsTwoBlocks() {
        let derived = PBKDF2.sha256(
            password: bytes("passwordPASSWORDpassword"),
            salt: bytes("saltSALTsaltSALTsaltSALTsaltSALTsalt"),
            iterations: 4096, derivedKeyLength: 40
        )
        #expect(Hex.encode(derived) == "348c89dbcbd32b2f32d814b8116e84cf2b17347ebc1800181c4e2a1fb8dd53e1c635518c7dac47e9")
    }

    /// RFC 7914 §11: PBKDF2-HMAC-SHA256 with P="passwd", S="salt", c=1, dkLen=64.
    @Test func rfc7914FourBlocks() {
        let derived = PBKDF2.sha256(password: bytes("passwd"), salt: bytes("salt"), iterations: 1, derivedKeyLength: 64)
        #expect(Hex.encode(derived) == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
            + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")
    }

    /// The library's PBKDF2 must agree with the definition written out with plain HMAC
    /// calls, including keys longer than a block and output prefixes.
    @Test(arguments: [1, 3, 17])
    func matchesDefinition(iterations: Int) {
        let password = [UInt8](repeating: 0x5a, count: 70)
        let salt = bytes("pepper and salt")
        var expected: [UInt8] = []
        for index: UInt8 in 1...2 {
            var u = HMACSHA256.authenticationCode(key: password, message: salt + [0, 0, 0, index])
            var t = u
            for _ in 1..<iterations {
                u = HMACSHA256.authenticationCode(key: password, message: u)
                t = zip(t, u).map { $0 ^ $1 }
            }
            expected += t
        }
        let derived = PBKDF2.sha256(password: password, salt: salt, iterations: iterations, derivedKeyLength: 64)
        #expect(derived == expected)
        let short = PBKDF2.sha256(password: password, salt: salt, iterations: iterations, derivedKeyLength: 5)
        #expect(short == Array(expected.prefix(5)))
        #expect(PBKDF2.sha256(password: password, salt: salt, iterations: iterations, derivedKeyLength: 0) == [])
    }
}
