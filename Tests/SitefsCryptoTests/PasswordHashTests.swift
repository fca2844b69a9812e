import Testing
import SitefsCrypto

@Suite struct PasswordHashTests {
    /// Low iteration count keeps the suite fast; the default count is covered once below.
    static let testIterations = 1_000

    @Test func roundTripAndWrongPassword() throws {
        let stored = PasswordHash.make(password: "correct horse battery staple", iterations: Self.testIterations)
        #expect(PasswordHash.verify(password: "correct horse battery staple", stored: stored))
        #expect(!PasswordHash.verify(password: "correct horse battery stapler", stored: stored))
        #expect(!PasswordHash.verify(password: "Correct horse battery staple", stored: stored))
        #expect(!PasswordHash.verify(password: "", stored: stored))

        let parsed = try #require(PasswordHash(stored: stored))
        #expect(parsed.iterations == Self.testIterations)
        #expect(parsed.salt.count == 16)
        #expect(parsed.hash.count == 32)
        #expect(parsed.stored == stored)
        #expect(stored.hasPrefix("pbkdf2-sha256$1000$"))
    }

    @Test func defaultIterationsRoundTrip() throws {
        let stored = PasswordHash.make(password: "pässwörd ✓")
        #expect(try #require(PasswordHash(stored: stored)).iterations == 210_000)
        #expect(PasswordHash.verify(password: "pässwörd ✓", stored: stored))
        #expect(!PasswordHash.verify(password: "passwörd ✓", stored: stored))
    }

    /// The hash is PBKDF2 over the password's UTF-8 with the stored salt: check a fixed
    /// stored string built from the published "password"/"salt" c=2 vector.
    @Test func verifiesKnownVector() {
        let salt = Base64URL.encode(bytes("saltsalt"))
        let hash = PBKDF2.sha256(password: bytes("password"), salt: bytes("saltsalt"), iterations: 2, derivedKeyLength: 32)
        let stored = "pbkdf2-sha256$2$\(salt)$\(Base64URL.encode(hash))"
        #expect(PasswordHash.verify(password: "password", stored: stored))
        #expect(!PasswordHash.verify(password: "passwore", stored: stored))
    }

    @Test func saltsAreRandom() {
        let a = PasswordHash.make(password: "same", iterations: 1)
        let b = PasswordHash.make(password: "same", iterations: 1)
        #expect(a != b)
        #expect(PasswordHash.verify(password: "same", stored: a))
        #expect(PasswordHash.verify(password: "same", stored: b))
    }

    @Test func tamperedHashFails() throws {
        let stored = PasswordHash.make(password: "hunter2", iterations: Self.testIterations)
        let parsed = try #require(PasswordHash(stored: stored))
        for index in [0, 15, 31] {
            var hash = parsed.hash
            hash[index] ^= 0x01
            let tampered = PasswordHash(iterations: parsed.iterations, salt: parsed.salt, hash: hash).stored
            #expect(!PasswordHash.verify(password: "hunter2", stored: tampered))
        }
        var salt = parsed.salt
        salt[0] ^= 0x80
        let otherSalt = PasswordHash(iterations: parsed.iterations, salt: salt, hash: parsed.hash).stored
        #expect(!PasswordHash.verify(password: "hunter2", stored: otherSalt))
        let otherCount = PasswordHash(iterations: parsed.iterations + 1, salt: parsed.salt, hash: parsed.hash).stored
        #expect(!PasswordHash.verify(password: "hunter2", stored: otherCount))

        // Altering the last character of the text must not produce a string that still
        // verifies, including changes confined to the unused low bits of that character.
        var characters = Array(stored)
        let last = characters.removeLast()
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        for replacement in alphabet.filter({ $0 != last }) {
            #expect(!PasswordHash.verify(password: "hunter2", stored: String(characters + [replacement])))
        }
    }

    @Test func malformedStoredStringsFail() {
        let salt = Base64URL.encode([UInt8](repeating: 7, count: 16))
        let hash = Base64URL.encode(PBKDF2.sha256(password: bytes("pw"), salt: [UInt8](repeating: 7, count: 16), iterations: 3, derivedKeyLength: 32))
        let good = "pbkdf2-sha256$3$\(salt)$\(hash)"
        #expect(PasswordHash.verify(password: "pw", stored: good))

        let malformed = [
            "",
            "pbkdf2-sha256",
            "pbkdf2-sha256$3$\(salt)",
            "pbkdf2-sha256$3$\(salt)$\(hash)$",
            "$pbkdf2-sha256$3$\(salt)$\(hash)",
            "pbkdf2-sha512$3$\(salt)$\(hash)",
            "PBKDF2-SHA256$3$\(salt)$\(hash)",
            "pbkdf2-sha256$$\(salt)$\(hash)",
            "pbkdf2-sha256$0$\(salt)$\(hash)",
            "pbkdf2-sha256$03$\(salt)$\(hash)",
            "pbkdf2-sha256$+3$\(salt)$\(hash)",
            "pbkdf2-sha256$-3$\(salt)$\(hash)",
            "pbkdf2-sha256$ 3$\(salt)$\(hash)",
            "pbkdf2-sha256$3.0$\(salt)$\(hash)",
            "pbkdf2-sha256$10000001$\(salt)$\(hash)",
            "pbkdf2-sha256$99999999999999999999$\(salt)$\(hash)",
            "pbkdf2-sha256$3$$\(hash)",
            "pbkdf2-sha256$3$\(salt)$",
            "pbkdf2-sha256$3$\(salt)=$\(hash)",
            "pbkdf2-sha256$3$\(salt)$\(hash)=",
            "pbkdf2-sha256$3$\(salt)$\(hash) ",
            "pbkdf2-sha256$3$\(salt.replacingFirst("+"))$\(hash)",
            "pbkdf2-sha256$3$\(salt)$\(hash.dropLast())",
            "pbkdf2-sha256$3$\(salt)$\(hash.dropLast(3))",
            "pbkdf2-sha256$3$AAAA$\(hash)",  // 3-byte salt: too short
        ]
        for stored in malformed {
            #expect(PasswordHash(stored: stored) == nil, "\(stored)")
            #expect(!PasswordHash.verify(password: "pw", stored: stored), "\(stored)")
        }
    }

    @Test func iterationBoundsWhenParsing() {
        let salt = Base64URL.encode([UInt8](repeating: 1, count: 16))
        let hash = Base64URL.encode([UInt8](repeating: 2, count: 32))
        #expect(PasswordHash(stored: "pbkdf2-sha256$1$\(salt)$\(hash)")?.iterations == 1)
        #expect(PasswordHash(stored: "pbkdf2-sha256$10000000$\(salt)$\(hash)")?.iterations == 10_000_000)
        #expect(PasswordHash(stored: "pbkdf2-sha256$10000001$\(salt)$\(hash)") == nil)
    }
}

private extension String {
    /// Replaces the first character, to produce a character outside the base64url alphabet.
    func replacingFirst(_ replacement: Character) -> String {
        String(replacement) + dropFirst()
    }
}
