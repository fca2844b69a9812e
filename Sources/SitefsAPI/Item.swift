/// What an item is. Sites are the top-level containers a user is granted. A symlink is a
/// symbolic link: its `symlink_target` is all it holds (its content reads as the target);
/// the server never follows it.
public enum ItemKind: String, Codable, Sendable, CaseIterable {
    case site, folder, file, symlink
}

/// The permission bits an item's `mode` may carry (rwx for owner, group and others, with
/// setuid, setgid and sticky): 0...0o7777.
public enum ItemMode {
    public static let range: ClosedRange<Int> = 0...0o7777
    /// The longest symbolic link target, in bytes (PATH_MAX less its NUL).
    public static let maximumSymlinkTarget = 4095

    /// Whether `target` may be a link's target: 1 to 4095 bytes of UTF-8, none of them NUL.
    public static func isValidTarget(_ target: String) -> Bool {
        let bytes = target.utf8.count
        return bytes >= 1 && bytes <= maximumSymlinkTarget && !target.utf8.contains(0)
    }
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
    /// Permission bits kept with the item (`chmod`), within `ItemMode.range`; nil when none
    /// were ever set (clients show 0644 for files, 0755 for folders). A mode is no version:
    /// setting one leaves `etag` alone.
    public var mode: Int?
    /// A symlink's target (kind `symlink` only), exactly as it was made.
    public var symlinkTarget: String?

    public init(
        id: String, parentID: String?, siteID: String, name: String, kind: ItemKind, size: Int64,
        contentType: String?, createdAt: Timestamp, modifiedAt: Timestamp, createdBy: String,
        modifiedBy: String, etag: String, capabilities: [Capability], lock: ItemLock? = nil,
        mode: Int? = nil, symlinkTarget: String? = nil
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
        self.mode = mode
        self.symlinkTarget = symlinkTarget
    }

    enum CodingKeys: String, CodingKey {
        case id, name, kind, size, etag, capabilities, lock, mode
        case symlinkTarget = "symlink_target"
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
        // Absent (a server from before modes and links) or null: none.
        mode = try c.decodeIfPresent(Int.self, forKey: .mode)
        symlinkTarget = try c.decodeIfPresent(String.self, forKey: .symlinkTarget)
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
        try c.encode(mode, forKey: .mode)  // explicit null: none set
        try c.encode(symlinkTarget, forKey: .symlinkTarget)  // explicit null but for links
    }
}
