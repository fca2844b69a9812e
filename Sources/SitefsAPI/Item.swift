/// What an item is. Sites are the top-level containers a user is granted.
public enum ItemKind: String, Codable, Sendable, CaseIterable {
    case site, folder, file
}

/// What the caller may do with an item (File Provider capabilities). The client maps these
/// to permission bits; the server enforces them.
public enum Capability: String, Codable, Sendable, CaseIterable {
    case read, write, rename, delete
    case addChildren = "add_children"
}

/// One item as the API describes it (`Item` in the OpenAPI document).
public struct Item: Codable, Sendable, Equatable {
    public var id: String
    /// nil for sites.
    public var parentID: String?
    public var siteID: String
    public var name: String
    public var kind: ItemKind
    /// Content length in bytes for files; 0 for folders and sites.
    public var size: Int64
    public var contentType: String?
    public var createdAt: Timestamp
    public var modifiedAt: Timestamp
    public var createdBy: String
    public var modifiedBy: String
    /// The version: for files it changes with every content change and only then.
    public var etag: String
    public var capabilities: [Capability]
    /// The live lock for editing on a file; nil when there is none (always for folders and
    /// sites). A lock is no version: taking or releasing one leaves `etag` alone.
    public var lock: ItemLock?

    public init(
        id: String, parentID: String?, siteID: String, name: String, kind: ItemKind, size: Int64,
        contentType: String?, createdAt: Timestamp, modifiedAt: Timestamp, createdBy: String,
        modifiedBy: String, etag: String, capabilities: [Capability], lock: ItemLock? = nil
    ) {
        self.id = id
        self.parentID = parentID
        self.siteID = siteID
        self.name = name
        self.kind = kind
        self.size = size
        self.contentType = contentType
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt
        self.createdBy = createdBy
        self.modifiedBy = modifiedBy
        self.etag = etag
        self.capabilities = capabilities
        self.lock = lock
    }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, size, etag, capabilities, lock
        case parentID = "parent_id"
        case siteID = "site_id"
        case contentType = "content_type"
        case createdAt = "created_at"
        case modifiedAt = "modified_at"
        case createdBy = "created_by"
        case modifiedBy = "modified_by"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        parentID = try c.decodeIfPresent(String.self, forKey: .parentID)
        siteID = try c.decode(String.self, forKey: .siteID)
        name = try c.decode(String.self, forKey: .name)
        kind = try c.decode(ItemKind.self, forKey: .kind)
        size = try c.decode(Int64.self, forKey: .size)
        contentType = try c.decodeIfPresent(String.self, forKey: .contentType)
        createdAt = try c.decode(Timestamp.self, forKey: .createdAt)
        modifiedAt = try c.decode(Timestamp.self, forKey: .modifiedAt)
        createdBy = try c.decode(String.self, forKey: .createdBy)
        modifiedBy = try c.decode(String.self, forKey: .modifiedBy)
        etag = try c.decode(String.self, forKey: .etag)
        // Capabilities a newer server adds are ignored rather than failing the whole item.
        capabilities = try c.decode([String].self, forKey: .capabilities).compactMap(Capability.init(rawValue:))
        // Absent (a server from before locks) or null: no lock.
        lock = try c.decodeIfPresent(ItemLock.self, forKey: .lock)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(parentID, forKey: .parentID)  // explicit null for sites
        try c.encode(siteID, forKey: .siteID)
        try c.encode(name, forKey: .name)
        try c.encode(kind, forKey: .kind)
        try c.encode(size, forKey: .size)
        try c.encode(contentType, forKey: .contentType)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(modifiedAt, forKey: .modifiedAt)
        try c.encode(createdBy, forKey: .createdBy)
        try c.encode(modifiedBy, forKey: .modifiedBy)
        try c.encode(etag, forKey: .etag)
        try c.encode(capabilities, forKey: .capabilities)
        try c.encode(lock, forKey: .lock)  // explicit null: no lock
    }
}
