import Crypto
import _CryptoExtras

/// Turns a positive 64-bit number into a 22-character token that reveals nothing about
/// it, and back: for ids a server counts up but must not show in the clear.
///
/// The token is one AES block, the number's 8 bytes (big-endian) followed by an 8-byte
/// fixed tag, through AES's block permutation (swift-crypto's `AES.permute`) under a
/// 256-bit key, then base64url. A block permutation of distinct inputs gives outputs that
/// look random and carry no order, so tokens for 41 and 42 share nothing. Opening checks
/// the tag: a token the key holder did not make opens to a wrong tag except with
/// probability 2^-64, so it is refused, not taken for some other number. A token has one
/// spelling: `Base64URL.decode` refuses non-zero unused bits.
///
/// Deterministic on purpose (the same number always gives the same token): these are
/// names, which a client keeps as keys; a cursor, which may differ every time, is sealed
/// with AES-GCM instead.
public struct OpaqueNumber: Sendable {
    /// Length of every token, in ASCII characters (16 bytes of base64url, unpadded).
    public static let tokenLength = 22
    private static let tag: [UInt8] = Array("sitefs:1".utf8)
    private let key: SymmetricKey

    /// - Parameters:
    ///   - key: 32 secret bytes.
    ///   - domain: keeps two uses of one key apart (ids of items and of something else
    ///     never open as each other): the permutation's key is HMAC(key, domain).
    public init(key: [UInt8], domain: String = "") {
        precondition(key.count == 32, "OpaqueNumber takes a 256-bit key")
        // The domain is mixed into the key, so the tag in the block stays fixed.
        self.key = SymmetricKey(data: HMACSHA256.authenticationCode(key: key, message: Array("opaque-number:\(domain)".utf8)))
    }

    /// The token for `number`, which must be positive.
    public func token(for number: Int64) -> String {
        precondition(number > 0, "only positive numbers have tokens")
        var block = withUnsafeBytes(of: UInt64(number).bigEndian) { Array($0) } + Self.tag
        do {
            try AES.permute(&block, key: key)
        } catch {
            fatalError("AES block permutation failed: \(error)")  // sizes are fixed above
        }
        return Base64URL.encode(block)
    }

    /// The number behind a token this key made, or nil for anything else.
    public func number(for token: String) -> Int64? {
        guard token.utf8.count == Self.tokenLength, var block = Base64URL.decode(token), block.count == 16 else {
            return nil
        }
        do {
            try AES.inversePermute(&block, key: key)
        } catch {
            return nil
        }
        guard Array(block[8...]) == Self.tag else { return nil }
        let value = block[..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard value > 0, value <= UInt64(Int64.max) else { return nil }
        return Int64(value)
    }
}
