import SitefsAPI

/// Item metadata as the filesystem needs it: enough for `stat`, `ls -l` and permission
/// bits without downloading anything (a placeholder).
public struct ProviderItem: Sendable, Equatable {
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

    public init(identifier: ItemIdentifier, parent: ItemIdentifier?, name: String, kind: Kind, size: Int64,
                created: Timestamp, modified: Timestamp, createdBy: String, modifiedBy: String, version: String,
                capabilities: Capabilities) {
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
    }

    /// What a file created on the mount may do before the server has it.
    public static let localFileCapabilities: Capabilities = [.read, .write, .rename, .delete]

    public var isWritable: Bool {
        kind == .file ? capabilities.contains(.write) : capabilities.contains(.addChildren)
    }
}
