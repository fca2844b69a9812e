import Crypto

/// A lock's public id, derived from its secret token and the item it locks (SHA-256 with a
/// domain of its own, cut to 128 bits, base64url): anyone may read it in a listing, nobody
/// can get the token back from it, and one token on two items (a client may reuse one)
/// makes two ids. Because the id follows from the token, a client that chose the token
/// itself (`sitefs-server` takes a client's token for a new lock) knows which lock is its
/// own even when the answer to its request was lost in transit.
public enum LockIdentity: Sendable {
    /// The shortest token a client may choose: 32 base64url characters (192 bits).
    public static let minimumClientTokenLength = 32

    /// `item`: the locked item's id as the API gives it.
    public static func lockID(forToken token: String, item: String) -> String {
        let bytes: [UInt8] = Array(("sitefs-lock-id:" + item + ":" + token).utf8)
        let digest = Crypto.SHA256.hash(data: bytes)
        return Base64URL.encode(Array(Array(digest).prefix(16)))
    }

    /// A new unpredictable token (32 random bytes, base64url: 43 characters).
    public static func newToken() -> String {
        Base64URL.encode(SecureRandom.bytes(count: 32))
    }
}
