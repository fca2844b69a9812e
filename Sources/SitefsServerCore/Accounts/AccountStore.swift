import Foundation
import SitefsAPI
import SitefsCrypto

/// Users, their password hashes, session tokens and site grants.
///
/// Passwords are kept as salted PBKDF2-SHA256 hashes. Session tokens are 256 random bits
/// handed to the client once; the database keeps only their SHA-256, so a copy of the
/// database does not sign anybody in.
public struct AccountStore: Sendable {
    let metadata: MetadataStore
    let tokenLifetimeSeconds: Int64
    /// The wall clock sessions are stamped and expired by (see `ServerConfiguration.now`).
    private let now: @Sendable () -> Timestamp
    let passwordIterations: Int
    /// Failed sign-ins per user and address: too many in a row wait (429).
    public let throttle: SignInThrottle
    /// Where sign-ins' password hashing runs: off the request threads, a few at a time.
    public let hashing: HashingGate

    /// A hash of a password nobody has, checked when the user is unknown so that a wrong
    /// user name costs as much time as a wrong password.
    private let decoyHash: String

    init(metadata: MetadataStore, tokenLifetimeSeconds: Int64, passwordIterations: Int,
         throttle: SignInThrottle = SignInThrottle(), hashing: HashingGate = HashingGate(),
         now: @escaping @Sendable () -> Timestamp = { Timestamp.now() }) {
        self.metadata = metadata
        self.now = now
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        self.passwordIterations = passwordIterations
        self.throttle = throttle
        self.hashing = hashing
        self.decoyHash = PasswordHash.make(password: Hex.encode(SecureRandom.bytes(count: 16)), iterations: passwordIterations)
    }

    /// User names: 1-64 characters of letters, digits and `._@-`, so they are safe in
    /// logs, file metadata and conflict file names.
    public static func validateUserName(_ name: String) throws {
        let allowed = name.unicodeScalars.allSatisfy {
            ($0.properties.isAlphabetic || $0.properties.numericType != nil || "._@-".unicodeScalars.contains($0))
        }
        guard !name.isEmpty, name.count <= 64, allowed else {
            throw APIError.badRequest("user names are 1-64 letters, digits or . _ @ -", code: "invalid_user_name")
        }
    }

    /// Display names ("Anna Berger"): what other people read where the account acts (a
    /// lock's holder). At most this many bytes, no control characters, not blank.
    public static let maximumDisplayNameBytes = 200

    public static func validateDisplayName(_ name: String) throws {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.utf8.count <= maximumDisplayNameBytes,
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIError.badRequest(
                "display names are 1-\(maximumDisplayNameBytes) bytes, not blank, without control characters", code: "invalid_display_name")
        }
    }

    public func addUser(named name: String, password: String, displayName: String? = nil) async throws {
        try Self.validateUserName(name)
        if let displayName { try Self.validateDisplayName(displayName) }
        guard !password.isEmpty else { throw APIError.badRequest("the password is empty", code: "empty_password") }
        let hash = PasswordHash.make(password: password, iterations: passwordIterations)
        try await metadata.write { db in
            if try db.exists(sql: "SELECT 1 FROM users WHERE name = ?", arguments: [name]) {
                throw APIError.conflict("user '\(name)' already exists", code: "user_exists")
            }
            try db.execute(sql: "INSERT INTO users (name, password_hash, created_at, display_name) VALUES (?, ?, ?, ?)",
                           arguments: [name, hash, now().microseconds, displayName])
        }
    }

    /// Sets a user's display name, or removes it (nil: the account name shows). Locks taken
    /// before keep the name they were taken under.
    public func setDisplayName(of name: String, to displayName: String?) async throws {
        if let displayName { try Self.validateDisplayName(displayName) }
        try await metadata.write { db in
            guard try db.exists(sql: "SELECT 1 FROM users WHERE name = ?", arguments: [name]) else {
                throw APIError(.notFound, code: "no_such_user", "there is no user '\(name)'")
            }
            try db.execute(sql: "UPDATE users SET display_name = ? WHERE name = ?", arguments: [displayName, name])
        }
    }

    public func userExists(_ name: String) async throws -> Bool {
        try await metadata.read { db in try db.exists(sql: "SELECT 1 FROM users WHERE name = ?", arguments: [name]) }
    }

    /// Checks a password and opens a session. Wrong user and wrong password are the same 401.
    /// A name no user can have (one with a NUL byte, which SQLite's text binding would cut
    /// short: `anna\0garbage` signed in as anna) is an unknown user, checked against the decoy.
    ///
    /// Attempts too soon after failed ones (per user name and per `address`) are refused with
    /// 429 before any hashing (`SignInThrottle`); the hash itself runs off the request threads
    /// (`HashingGate`).
    public func signIn(username: String, password: String, address: String? = nil) async throws -> SessionGrant {
        if let wait = throttle.wait(user: username, address: address) { throw APIError.tooManyAttempts(retryAfter: wait) }
        let possible = (try? Self.validateUserName(username)) != nil
        let user = possible ? try await lookUpUser(username) : nil
        let stored = user?.hash ?? decoyHash
        let matches = try await hashing.run { PasswordHash.verify(password: password, stored: stored) }
        guard matches, let userID = user?.id else {
            throttle.failed(user: username, address: address)
            throw APIError.unauthorized("wrong user name or password")
        }
        throttle.succeeded(user: username, address: address)
        return try await openSession(for: userID)
    }

    private func lookUpUser(_ username: String) async throws -> (id: Int64, hash: String)? {
        try await metadata.read { db -> (id: Int64, hash: String)? in
            try db.row(sql: "SELECT id, password_hash FROM users WHERE name = ?", arguments: [username])
                .map { (try $0.int("id"), try $0.text("password_hash")) }
        }
    }

    private func openSession(for userID: Int64) async throws -> SessionGrant {
        let token = Base64URL.encode(SecureRandom.bytes(count: 32))
        let now = self.now().microseconds
        let expires = now + tokenLifetimeSeconds * 1_000_000
        try await metadata.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE expires_at <= ?", arguments: [now])
            try db.execute(sql: "INSERT INTO sessions (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                           arguments: [Self.tokenHash(token), userID, now, expires])
        }
        return SessionGrant(token: token, expiresAt: Timestamp(microsecondsSinceEpoch: expires))
    }

    /// The user a bearer token belongs to, or 401 when it is unknown, revoked or expired.
    public func caller(forToken token: String) async throws -> Caller {
        let row = try await metadata.read { db -> (id: Int64, name: String, expires: Int64)? in
            try db.row(sql: """
                    SELECT users.id, users.name, sessions.expires_at FROM sessions JOIN users ON users.id = sessions.user_id
                    WHERE sessions.token_hash = ?
                    """,
                arguments: [Self.tokenHash(token)]
            ).map { (try $0.int("id"), try $0.text("name"), try $0.int("expires_at")) }
        }
        guard let row else { throw APIError.unauthorized("the session token is unknown or was revoked; sign in again") }
        guard row.expires > now().microseconds else {
            throw APIError.unauthorized("the session token has expired; sign in again")
        }
        return Caller(userID: row.id, name: row.name)
    }

    public func signOut(token: String) async throws {
        try await metadata.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE token_hash = ?", arguments: [Self.tokenHash(token)])
        }
    }

    /// Ends every session of a user at `when` (tests and administration).
    public func expireSessions(of username: String, at when: Timestamp = .now()) async throws {
        try await metadata.write { db in
            try db.execute(
                sql: "UPDATE sessions SET expires_at = ? WHERE user_id = (SELECT id FROM users WHERE name = ?)",
                arguments: [when.microseconds, username])
        }
    }

    /// Grants a user a site (or changes the grant's read-only flag).
    public func grant(user: String, site: String, readOnly: Bool) async throws {
        try await metadata.write { db in
            guard let userID = try db.int(sql: "SELECT id FROM users WHERE name = ?", arguments: [user]) else {
                throw APIError(.notFound, code: "no_such_user", "there is no user '\(user)'")
            }
            guard let siteID = try db.int(sql: "SELECT id FROM items WHERE parent_id IS NULL AND name = ?", arguments: [site])
            else { throw APIError(.notFound, code: "no_such_site", "there is no site '\(site)'") }
            try db.execute(
                sql: """
                    INSERT INTO grants (user_id, site_id, read_only) VALUES (?, ?, ?)
                    ON CONFLICT (user_id, site_id) DO UPDATE SET read_only = excluded.read_only
                    """,
                arguments: [userID, siteID, readOnly])
        }
    }

    static func tokenHash(_ token: String) -> String {
        Hex.encode(SHA256.hash(Array(token.utf8)))
    }
}
