import Crypto

/// HMAC-SHA256 (RFC 2104), from swift-crypto.
public enum HMACSHA256: Sendable {
    /// The 32-byte authentication code of `message` under `key` (a key of any length).
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(HMAC<Crypto.SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}
