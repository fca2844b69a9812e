import Crypto
import _CryptoExtras

/// PBKDF2 (RFC 8018 §5.2) with HMAC-SHA256, from swift-crypto: the deliberately slow key
/// derivation behind stored password hashes.
public enum PBKDF2: Sendable {
    /// Derives `derivedKeyLength` bytes from `password` and `salt` with `iterations` rounds.
    /// The iteration count is the stored hash's own (`PasswordHash`), checked there; tests
    /// use few rounds, which the library allows only through its unchecked entry point.
    ///
    /// - Precondition: `iterations >= 1` and `derivedKeyLength >= 0`.
    public static func sha256(password: [UInt8], salt: [UInt8], iterations: Int, derivedKeyLength: Int) -> [UInt8] {
        precondition(iterations >= 1, "PBKDF2 needs at least one iteration")
        precondition(derivedKeyLength >= 0, "negative derived key length")
        guard derivedKeyLength > 0 else { return [] }
        do {
            let key = try KDF.Insecure.PBKDF2.deriveKey(from: withStorage(password), salt: withStorage(salt), using: .sha256,
                                                        outputByteCount: derivedKeyLength, unsafeUncheckedRounds: iterations)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            // Only an allocation failure inside BoringSSL gets here: nothing to recover.
            fatalError("PBKDF2 failed: \(error)")
        }
    }

    /// The same bytes in an array with storage of its own even when empty: the library
    /// force-unwraps the base address of its inputs, which an empty array does not have.
    private static func withStorage(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.isEmpty else { return bytes }
        var empty = [UInt8]()
        empty.reserveCapacity(1)
        return empty
    }
}
