/// Request and response bodies of API v1 other than `Item` itself.

/// One page of an enumeration: `GET /v1/sites`, `GET /v1/items/{id}/children`.
public struct ItemPage: Codable, Sendable, Equatable {
    public var items: [Item]
    /// Opaque; nil on the last page.
    public var nextCursor: String?

    public init(items: [Item], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case items
        case nextCursor = "next_cursor"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(items, forKey: .items)
        try c.encode(nextCursor, forKey: .nextCursor)  // explicit null ends the enumeration
    }
}

/// One entry of the change feed: an item that now looks like this, or one that is gone.
public enum Change: Codable, Sendable, Equatable {
    case item(Item)
    case deleted(id: String, siteID: String)

    enum CodingKeys: String, CodingKey {
        case item, deleted
        case siteID = "site_id"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let item = try c.decodeIfPresent(Item.self, forKey: .item) {
            self = .item(item)
        } else {
            self = .deleted(id: try c.decode(String.self, forKey: .deleted), siteID: try c.decode(String.self, forKey: .siteID))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .item(let item):
            try c.encode(item, forKey: .item)
        case .deleted(let id, let siteID):
            try c.encode(id, forKey: .deleted)
            try c.encode(siteID, forKey: .siteID)
        }
    }
}

/// `GET /v1/changes`.
public struct ChangePage: Codable, Sendable, Equatable {
    public var changes: [Change]
    /// Pass back as `cursor` to get what changed after this page.
    public var nextCursor: String
    /// True when more changes are waiting: ask again at once with `nextCursor`.
    public var hasMore: Bool

    public init(changes: [Change], nextCursor: String, hasMore: Bool) {
        self.changes = changes
        self.nextCursor = nextCursor
        self.hasMore = hasMore
    }

    enum CodingKeys: String, CodingKey {
        case changes
        case nextCursor = "next_cursor"
        case hasMore = "has_more"
    }
}

/// One stored version of a file.
public struct Version: Codable, Sendable, Equatable {
    public var etag: String
    public var size: Int64
    public var modifiedAt: Timestamp
    public var modifiedBy: String

    public init(etag: String, size: Int64, modifiedAt: Timestamp, modifiedBy: String) {
        self.etag = etag
        self.size = size
        self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy
    }

    enum CodingKeys: String, CodingKey {
        case etag, size
        case modifiedAt = "modified_at"
        case modifiedBy = "modified_by"
    }
}

/// `GET /v1/items/{id}/versions`, newest first.
public struct VersionList: Codable, Sendable, Equatable {
    public var versions: [Version]
    public init(versions: [Version]) { self.versions = versions }
}

/// `POST /v1/session` request.
public struct SessionRequest: Codable, Sendable {
    public var username: String
    public var password: String
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// `POST /v1/session` response.
public struct SessionGrant: Codable, Sendable {
    public var token: String
    public var expiresAt: Timestamp
    public init(token: String, expiresAt: Timestamp) {
        self.token = token
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case token
        case expiresAt = "expires_at"
    }
}

/// `POST /v1/items/{parent}/children` JSON body (folders).
public struct NewFolder: Codable, Sendable {
    public var name: String
    /// `folder`, or `symlink` with `symlink_target`.
    public var kind: ItemKind
    public var symlinkTarget: String?
    public init(name: String) {
        self.name = name
        self.kind = .folder
    }

    /// A symbolic link `name` pointing at `target`.
    public init(name: String, symlinkTarget target: String) {
        self.name = name
        self.kind = .symlink
        self.symlinkTarget = target
    }

    enum CodingKeys: String, CodingKey {
        case name, kind
        case symlinkTarget = "symlink_target"
    }
}

/// `PATCH /v1/items/{id}` body: rename, move within a site, set mtime, set the mode.
public struct ItemPatch: Codable, Sendable, Equatable {
    public var name: String?
    public var parentID: String?
    public var modifiedAt: Timestamp?
    /// Atomically replace an existing file at the destination (rename-over).
    public var replace: Bool?
    /// New permission bits (`ItemMode.range`).
    public var mode: Int?

    public init(name: String? = nil, parentID: String? = nil, modifiedAt: Timestamp? = nil, replace: Bool? = nil,
                mode: Int? = nil) {
        self.name = name
        self.parentID = parentID
        self.modifiedAt = modifiedAt
        self.replace = replace
        self.mode = mode
    }

    enum CodingKeys: String, CodingKey {
        case name, replace, mode
        case parentID = "parent_id"
        case modifiedAt = "modified_at"
    }
}

/// The body of every error response: `{"error": {"code", "message"}}`; a 412 also carries
/// the item as it is now, so the client can decide without another round trip, and a 423
/// the lock in the way (who holds it, since when).
public struct ErrorResponse: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var error: Detail
    public var item: Item?
    public var lock: ItemLock?

    public init(code: String, message: String, item: Item? = nil, lock: ItemLock? = nil) {
        self.error = Detail(code: code, message: message)
        self.item = item
        self.lock = lock
    }
}
