import SitefsAPI

/// Item metadata as the filesystem needs it: enough for `stat`, `ls -l` and permission
/// bits without downloading anything (a placeholder).
public struct ProviderItem: Sendable, Equatable {
    /// The largest size a backend may report (1 EiB): a server's item claiming more is
    /// refused. Far above any document, and far enough below the largest file offset
    /// (2^63 - 1) that offsets plus read-ahead windows cannot overflow.
    public static let maximumSize: Int64 = 1 << 60

    public enum Kind: Sendable, Equatable {
        /// `symlink`: a symbolic link, kept by the server as an item whose only content is its
        /// target (`symlinkTarget`); the server never follows it.
        case site, folder, file, symlink
        public var isContainer: Bool { self == .site || self == .folder }
    }

    /// The longest symbolic link target, in bytes (PATH_MAX less its terminating NUL): what
    /// `symlink(2)` accepts on Linux. Longer targets are refused (ENAMETOOLONG) by the mount
    /// and by the servers.
    public static let maximumSymlinkTarget = 4095

    /// The permission bits a mode may carry (rwx for owner, group, others, and the setuid,
    /// setgid and sticky bits).
    public static let permissionBits: UInt16 = 0o7777

    /// Whether `target` may be a symbolic link's target: 1...`maximumSymlinkTarget` bytes,
    /// none of them NUL. Anything else is bytes as given: relative targets stay relative,
    /// targets outside the mount are allowed, no normalisation.
    public static func isValidSymlinkTarget(_ target: [UInt8]) -> Bool {
        !target.isEmpty && target.count <= maximumSymlinkTarget && !target.contains(0)
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
    public var lock: ProviderLock? {
        get { lockBox?.lock }
        set { lockBox = newValue.map(LockBox.init) }
    }
    /// Where the lock is kept: behind a reference, so an item without one (nearly every
    /// item) does not carry a lock's 90 bytes inline; a cache holds 100,000 items.
    private var lockBox: LockBox?
    /// The permission bits the server keeps for the item (`chmod`; within `permissionBits`),
    /// nil when it keeps none: the mount then shows 0644 for files and 0755 for folders. Either
    /// way the mount takes away the write bits the grant does not allow. Not part of the
    /// content version: a chmod changes no content.
    public var mode: UInt16?
    /// A symbolic link's target (`kind == .symlink`), as bytes; nil for other kinds, and for a
    /// link whose listing did not carry it (a WebDAV `.rclonelink` file, whose content is the
    /// target: `size` is then its length, and reading the content gives it).
    public var symlinkTarget: [UInt8]?

    public init(identifier: ItemIdentifier, parent: ItemIdentifier?, name: String, kind: Kind, size: Int64,
                created: Timestamp, modified: Timestamp, createdBy: String, modifiedBy: String, version: String,
                capabilities: Capabilities, lock: ProviderLock? = nil, mode: UInt16? = nil, symlinkTarget: [UInt8]? = nil) {
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
        self.lockBox = lock.map(LockBox.init)
        self.mode = mode
        self.symlinkTarget = symlinkTarget
    }

    /// Names and versions are compared as bytes (see `ItemName.same`): a rename from one
    /// normalisation form to the other is a change.
    public static func == (lhs: ProviderItem, rhs: ProviderItem) -> Bool {
        lhs.identifier == rhs.identifier && lhs.parent == rhs.parent && ItemName.same(lhs.name, rhs.name) && lhs.kind == rhs.kind
            && lhs.size == rhs.size && lhs.created == rhs.created && lhs.modified == rhs.modified
            && ItemName.same(lhs.createdBy, rhs.createdBy) && ItemName.same(lhs.modifiedBy, rhs.modifiedBy)
            && ItemName.same(lhs.version, rhs.version) && lhs.capabilities == rhs.capabilities && lhs.lock == rhs.lock
            && lhs.mode == rhs.mode && lhs.symlinkTarget == rhs.symlinkTarget
    }

    /// A lock, immutable: replaced, never changed, so items sharing one never see another's.
    private final class LockBox: Sendable {
        let lock: ProviderLock
        init(_ lock: ProviderLock) { self.lock = lock }
    }

    /// What a file created on the mount may do before the server has it.
    public static let localFileCapabilities: Capabilities = [.read, .write, .rename, .delete]

    public var isWritable: Bool {
        switch kind {
        case .file: capabilities.contains(.write)
        case .symlink: capabilities.contains(.rename)
        case .site, .folder: capabilities.contains(.addChildren)
        }
    }
}
