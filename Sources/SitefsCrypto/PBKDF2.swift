// PBKDF2 (RFC 8018 §5.2) with HMAC-SHA256 as the PRF: the deliberately slow key
// derivation behind stored password hashes.

/// Password-based key derivation function 2.
public enum PBKDF2: Sendable {
    /// Derives `derivedKeyLength` bytes from `password` and `salt` with HMAC-SHA256 applied
    /// `iterations` times per output block.
    ///
    /// The iteration loop is specialised: the HMAC key-pad states are computed once, and
    /// because every intermediate value U is exactly one digest long, both hashes of an
    /// iteration fit in a single pre-padded block. Each iteration therefore costs exactly
    /// two SHA-256 compressions and allocates nothing, which is what keeps ~200,000
    /// iterations per sign-in affordable.
    ///
    /// - Precondition: `iterations >= 1` and `0 <= derivedKeyLength <= (2^32 - 1) * 32`.
    public static func sha256(password: [UInt8], salt: [UInt8], iterations: Int, derivedKeyLength: Int) -> [UInt8] {
        precondition(iterations >= 1, "PBKDF2 needs at least one iteration")
        precondition(derivedKeyLength >= 0, "negative derived key length")
        let digestSize = SHA256.digestByteCount
        let blockCount = (derivedKeyLength + digestSize - 1) / digestSize
        precondition(UInt64(blockCount) <= UInt64(UInt32.max), "derived key too long (RFC 8018 §5.2 step 1)")

        let keyed = HMACSHA256.KeyedStates(key: password)
        var derived = [UInt8]()
        derived.reserveCapacity(blockCount * digestSize)
        var index: UInt32 = 1
        while derived.count < derivedKeyLength {
            derived.append(contentsOf: block(keyed: keyed, salt: salt, iterations: iterations, index: index))
            index &+= 1
        }
        derived.removeLast(derived.count - derivedKeyLength)
        return derived
    }

    /// T_i = U_1 ^ U_2 ^ … ^ U_c, with U_1 = PRF(P, S || INT(i)) and U_j = PRF(P, U_{j-1}).
    private static func block(keyed: HMACSHA256.KeyedStates, salt: [UInt8], iterations: Int, index: UInt32) -> [UInt8] {
        let indexBytes: [UInt8] = [
            UInt8(truncatingIfNeeded: index >> 24), UInt8(truncatingIfNeeded: index >> 16),
            UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index),
        ]
        // U_1 has a salt of arbitrary length, so it goes through the general HMAC path.
        var u = SHA256.State(digest: keyed.authenticationCode(message: salt, indexBytes))
        var t = u
        guard iterations > 1 else { return t.bytes }

        SHA256.withCompressionContext { k, w in
            // Both the inner and the outer hash of U_j = HMAC(P, U_{j-1}) see the 64-byte
            // key-pad block (already absorbed in the precomputed state) followed by one
            // 32-byte value. So the second block is always: the value in words 0…7, then
            // the padding bit, zeros, and the total length 96 bytes = 768 bits. Words 8…15
            // are constant and the compression never overwrites them, so set them once.
            w[8] = 0x8000_0000
            for i in 9..<15 { w[i] = 0 }
            w[15] = UInt32((SHA256.blockByteCount + SHA256.digestByteCount) * 8)

            for _ in 1..<iterations {
                u.store(into: w)
                var innerDigest = keyed.inner
                SHA256.compress(&innerDigest, schedule: w, constants: k)
                innerDigest.store(into: w)
                u = keyed.outer
                SHA256.compress(&u, schedule: w, constants: k)
                t.formXor(u)
            }
        }
        return t.bytes
    }
}
