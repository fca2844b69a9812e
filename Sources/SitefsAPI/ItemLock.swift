/// A lock for editing on a file, as the API carries it (`Lock` in the OpenAPI document):
/// who holds it, from which device and application, since and until when. The secret
/// token that lets the holder write is never part of it; only `LockGrant` carries it, once,
/// to whoever took the lock.
public struct ItemLock: Codable, Sendable, Equatable {
    /// The lock's public id: names this lock (not the item), so a client that holds a token
    /// can tell its own lock from a later one on the same file.
    public var id: String
    /// The holder's account name.
    public var holder: String
    /// The holder as people read it: the account's display name, else the account name.
    public var holderName: String
    /// The machine the lock was taken from; may be empty.
    public var device: String
    /// The program the lock was taken for; may be empty.
    public var application: String
    public var createdAt: Timestamp
    /// The lock ends by itself at this time unless its holder refreshes it first.
    public var expiresAt: Timestamp

    public init(id: String, holder: String, holderName: String, device: String, application: String,
                createdAt: Timestamp, expiresAt: Timestamp) {
        self.id = id
        self.holder = holder
        self.holderName = holderName
        self.device = device
        self.application = application
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case id, holder, device, application
        case holderName = "holder_name"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }
}

/// `PUT /v1/items/{id}/lock` request body.
public struct LockRequestBody: Codable, Sendable, Equatable {
    /// At most `maximumTextBytes` bytes; may be empty.
    public var device: String
    /// At most `maximumTextBytes` bytes; may be empty.
    public var application: String
    /// Seconds, `timeoutRange`; the server's default (`defaultTimeout`) when nil.
    public var timeout: Int?

    /// Longest `device` and `application`, in UTF-8 bytes.
    public static let maximumTextBytes = 200
    /// Lock timeouts a server grants, in seconds.
    public static let timeoutRange: ClosedRange<Int> = 1...3600
    /// The timeout when a request names none, in seconds.
    public static let defaultTimeout = 600

    public init(device: String, application: String, timeout: Int?) {
        self.device = device
        self.application = application
        self.timeout = timeout
    }
}

/// `PUT /v1/items/{id}/lock` answer (201 taken, 200 refreshed): the lock and the token
/// that proves holding it. The token is a secret: sent back in `Lock-Token` on writes,
/// refreshes and the release, never shown.
public struct LockGrant: Codable, Sendable, Equatable {
    public var lock: ItemLock
    public var token: String

    public init(lock: ItemLock, token: String) {
        self.lock = lock
        self.token = token
    }
}
