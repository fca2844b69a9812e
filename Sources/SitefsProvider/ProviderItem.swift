import SitefsAPI

/// Item metadata as the filesystem needs it: enough for `stat`, `ls -l` and permission
/// bits without downloading anything (a placeholder).
public struct ProviderItem: Sendable, Equatable {
    /// The largest size a backend may report (1 EiB): a server's item claiming more is
    /// refused. Far above any document, and far enough below the largest file offset
    /// (2^63 - 1) that offsets plus read-ahead windows cannot overflow.
    public static let maximumSize: Int64 = 1 << 60

    public enum Kind: Sendable, Equatable {
        case site, folder, file
        public var isContainer: Bool { self != .file }
    }

    public var identifier: ItemIdentifier
    /// nil for sites.
    public var parent: ItemIdentifier?
    public var name: String
    public var kind: Kind
    public var size: Int64
    public var created: Timestamp
    public var modified: Timestamp
    public var createdBy: String
    public var modifiedBy: String
    /// The content version (etag) uploads are conditional on.
    public var version: String
    public var capabilities: Capabilities
    /// Someone's lock for editing (see `ProviderLock`); nil when the file is free or the
    /// server does not lock. Not part of the version: taking a lock changes no content.
    public var lock: ProviderLock?

    public init(identifier: ItemIdentifier, parent: ItemIdentifier?, name: String, kind: Kind, size: Int64,
                created: Timestamp, modified: Timestamp, createdBy: String, modifiedBy: String, version: String,
                capabilities: Capabilities, lock: ProviderLock? = nil) {
        self.identifier = identifier
        self.parent = parent
        self.name = name
        self.kind = kind
        self.size = size
        self.created = created
        self.modified = modified
        self.createdBy = createdBy
        self.modifiedBy = modifiedBy
        self.version = version
        self.capabilities = capabilities
        self.lock = lock
    }

    /// Names and versions are compared as bytes (see `ItemName.same`): a rename from one
    /// normalisation form to the other is a change.
    public static func == (lhs: ProviderItem, rhs: ProviderItem) -> Bool {
        lhs.identifier == rhs.identifier && lhs.parent == rhs.parent && ItemName.same(lhs.name, rhs.name) && lhs.kind == rhs.kind
            && lhs.size == rhs.size && lhs.created == rhs.created && lhs.modified == rhs.modified
            && ItemName.same(lhs.createdBy, rhs.createdBy) && ItemName.same(lhs.modifiedBy, rhs.modifiedBy)
            && ItemName.same(lhs.version, rhs.version) && lhs.capabilities == rhs.capabilities && lhs.lock == rhs.lock
    }

    /// What a file created on the mount may do before the server has it.
    public static let localFileCapabilities: Capabilities = [.read, .write, .rename, .delete]

    public var isWritable: Bool {
        kind == .file ? capabilities.contains(.write) : capabilities.contains(.addChildren)
    }
}
