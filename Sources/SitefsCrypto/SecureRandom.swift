import Crypto

/// Cryptographically secure random bytes, for salts, session tokens and anything else an
/// attacker must not predict: swift-crypto's generator (BoringSSL's, seeded by the kernel).
public enum SecureRandom: Sendable {
    /// `count` unpredictable bytes.
    public static func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        guard count > 0 else { return [] }
        return SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }
}
