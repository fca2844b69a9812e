// HMAC-SHA256 (RFC 2104, with SHA-256 as in RFC 4231): message authentication for
// session tokens and the PRF underneath PBKDF2.

/// HMAC with SHA-256: `H((K ^ opad) || H((K ^ ipad) || message))`.
public enum HMACSHA256: Sendable {
    /// Length of an authentication code in bytes.
    public static let byteCount = SHA256.digestByteCount

    /// The HMAC-SHA256 of `message` under `key`. Keys longer than 64 bytes are hashed
    /// first, as RFC 2104 §2 requires; shorter keys are zero-padded.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        KeyedStates(key: key).authenticationCode(message: message)
    }

    /// The SHA-256 states after absorbing `K ^ ipad` and `K ^ opad`.
    ///
    /// Each of those padded keys is exactly one block, so hashing it once and resuming from
    /// the resulting state (RFC 2104 §4, "Implementation note") saves two compressions per
    /// MAC. PBKDF2 relies on this: with the states precomputed, each of its iterations
    /// costs two compressions instead of four.
    struct KeyedStates: Sendable {
        let inner: SHA256.State
        let outer: SHA256.State

        init(key: [UInt8]) {
            let blockSize = SHA256.blockByteCount
            var paddedKey = key.count > blockSize ? SHA256.hash(key) : key
            paddedKey.append(contentsOf: repeatElement(0, count: blockSize - paddedKey.count))

            let innerPad = paddedKey.map { $0 ^ 0x36 }
            let outerPad = paddedKey.map { $0 ^ 0x5c }
            var inner = SHA256.State.initial
            var outer = SHA256.State.initial
            innerPad.withUnsafeBytes { SHA256.compress(&inner, blocks: $0.baseAddress!, blockCount: 1) }
            outerPad.withUnsafeBytes { SHA256.compress(&outer, blocks: $0.baseAddress!, blockCount: 1) }
            self.inner = inner
            self.outer = outer
        }

        /// HMAC of a message given in parts (PBKDF2 appends a block index to the salt);
        /// the parts are hashed as if concatenated.
        func authenticationCode(message parts: [UInt8]...) -> [UInt8] {
            var innerHasher = SHA256.Hasher(resuming: inner, afterByteCount: UInt64(SHA256.blockByteCount))
            for part in parts { innerHasher.update(part) }
            var outerHasher = SHA256.Hasher(resuming: outer, afterByteCount: UInt64(SHA256.blockByteCount))
            outerHasher.update(innerHasher.finalize())
            return outerHasher.finalize()
        }
    }
}
