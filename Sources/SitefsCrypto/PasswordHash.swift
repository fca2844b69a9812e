// Stored password hashes: PBKDF2-HMAC-SHA256 with a random salt, kept in one
// self-describing string so the iteration count can be raised later without breaking
// hashes that were stored earlier.

/// A parsed password hash in the stored format
/// `pbkdf2-sha256$<iterations>$<salt base64url>$<hash base64url>`.
///
/// Each stored string carries its own iteration count and salt, so `verify` keeps working
/// for old hashes after `defaultIterations` is raised.
public struct PasswordHash: Sendable, Equatable {
    /// Identifies the algorithm in the first field of the stored string.
    public static let algorithm = "pbkdf2-sha256"
    /// Iteration count for new hashes: the project's chosen cost per sign-in. It can be
    /// raised at any time; hashes stored earlier keep verifying with their own count.
    public static let defaultIterations = 210_000
    /// Accepted iteration counts when parsing. The upper bound stops a corrupted or hostile
    /// stored string from pinning a CPU for minutes per sign-in attempt.
    public static let iterationRange = 1...10_000_000
    /// Length of the random salt for new hashes, in bytes.
    public static let saltByteCount = 16
    /// Length of the derived key, in bytes (one SHA-256 output block).
    public static let hashByteCount = 32
    /// Salt lengths accepted when parsing: at least 8 bytes (RFC 8018 §4.1), and a small
    /// upper bound since longer salts add nothing.
    static let acceptedSaltByteCounts = 8...64

    public let iterations: Int
    public let salt: [UInt8]
    public let hash: [UInt8]

    /// Parses a stored string. Strict: exactly four `$`-separated fields, the known
    /// algorithm name, a canonical decimal iteration count (no sign, no leading zero) in
    /// `iterationRange`, canonical base64url salt and hash of acceptable lengths.
    /// Anything else is nil.
    public init?(stored: String) {
        let fields = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 4, fields[0] == Self.algorithm else { return nil }

        let digits = fields[1].utf8
        guard (1...8).contains(digits.count),
              digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              digits.first != UInt8(ascii: "0"),
              let iterations = Int(fields[1]),
              Self.iterationRange.contains(iterations)
        else { return nil }

        guard let salt = Base64URL.decode(String(fields[2])),
              Self.acceptedSaltByteCounts.contains(salt.count),
              let hash = Base64URL.decode(String(fields[3])),
              hash.count == Self.hashByteCount
        else { return nil }

        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// Assembles a hash from its parts (the caller is responsible for sensible values).
    public init(iterations: Int, salt: [UInt8], hash: [UInt8]) {
        self.iterations = iterations
        self.salt = salt
        self.hash = hash
    }

    /// The stored-string form.
    public var stored: String {
        "\(Self.algorithm)$\(iterations)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
    }

    /// Hashes `password` with a fresh random salt and returns the stored string.
    ///
    /// The password is used as its UTF-8 bytes, without Unicode normalisation: clients must
    /// send the same code points at sign-in as at sign-up.
    public static func make(password: String, iterations: Int = defaultIterations) -> String {
        precondition(iterationRange.contains(iterations), "iteration count out of range")
        let salt = SecureRandom.bytes(count: saltByteCount)
        let hash = PBKDF2.sha256(
            password: Array(password.utf8), salt: salt,
            iterations: iterations, derivedKeyLength: hashByteCount
        )
        return PasswordHash(iterations: iterations, salt: salt, hash: hash).stored
    }

    /// Whether `password` matches the `stored` string. A malformed stored string never
    /// matches. The final comparison is constant-time so response timing does not reveal
    /// how much of a guessed hash was right.
    public static func verify(password: String, stored: String) -> Bool {
        guard let parsed = PasswordHash(stored: stored) else { return false }
        let candidate = PBKDF2.sha256(
            password: Array(password.utf8), salt: parsed.salt,
            iterations: parsed.iterations, derivedKeyLength: parsed.hash.count
        )
        return ConstantTime.equals(candidate, parsed.hash)
    }
}
