import Crypto

/// MD5, from swift-crypto, for names other programs compute with it: the freedesktop
/// thumbnail cache files each thumbnail as the MD5 of the file's URI. Never for security
/// (hence swift-crypto's `Insecure` namespace).
public enum MD5: Sendable {
    /// The digest of `bytes` as 32 lowercase hex digits.
    public static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        Insecure.MD5.hash(data: Array(bytes)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
