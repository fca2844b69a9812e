import SitefsProvider

/// Item metadata -> `stat` fields. The permission bits are the server's (`chmod`), or 0644
/// and 0755 where it keeps none, less the write bits the grant does not allow: a read-only
/// grant or mount shows no write bit, and the kernel (`default_permissions`) refuses writes
/// before they reach us. A symbolic link is 0777, as everywhere on Linux.
enum AttributeMapping {
    static let directoryType: UInt32 = 0o040000
    static let regularType: UInt32 = 0o100000
    static let symlinkType: UInt32 = 0o120000
    static let writeBits: UInt16 = 0o222
    /// What items show where the server keeps no mode.
    static let defaultFileMode: UInt16 = 0o644
    static let defaultFolderMode: UInt16 = 0o755

    /// The permission bits shown for an item, before any write bit is taken away.
    static func permissions(of item: ProviderItem) -> UInt16 {
        switch item.kind {
        case .symlink: return 0o777
        case .site, .folder: return item.mode ?? defaultFolderMode
        case .file: return item.mode ?? defaultFileMode
        }
    }

    static func mode(for item: ProviderItem, readOnlyMount: Bool) -> UInt32 {
        var bits = permissions(of: item) & ProviderItem.permissionBits
        if item.kind != .symlink, !item.isWritable || readOnlyMount { bits &= ~writeBits }
        return fileType(of: item.kind) | UInt32(bits)
    }

    /// The `S_IFMT` bits of a kind (readdir's d_type comes from them).
    static func fileType(of kind: ProviderItem.Kind) -> UInt32 {
        switch kind {
        case .site, .folder: directoryType
        case .file: regularType
        case .symlink: symlinkType
        }
    }

    static func attributes(inode: InodeNumber, item: ProviderItem, size: Int64? = nil, modified: TimeSpec? = nil,
                           configuration: FilesystemConfiguration) -> FileAttributes {
        let bytes = UInt64(max(0, item.kind == .symlink ? Int64(item.symlinkTarget?.count ?? Int(item.size)) : size ?? item.size))
        let time = modified ?? timespec(item.modified)
        return FileAttributes(
            inode: inode, size: item.kind.isContainer ? 4096 : bytes, blocks: (bytes + 511) / 512,
            mode: mode(for: item, readOnlyMount: configuration.readOnly),
            linkCount: item.kind.isContainer ? 2 : 1, uid: configuration.uid, gid: configuration.gid,
            accessTime: time, modificationTime: time, changeTime: time)
    }

    /// The root: read-only, dated when the mount started.
    static func root(configuration: FilesystemConfiguration, mountedAt: TimeSpec) -> FileAttributes {
        FileAttributes(inode: .root, size: 4096, blocks: 8, mode: directoryType | 0o555, linkCount: 2,
                       uid: configuration.uid, gid: configuration.gid,
                       accessTime: mountedAt, modificationTime: mountedAt, changeTime: mountedAt)
    }

    static func timespec(_ timestamp: SitefsAPI.Timestamp) -> TimeSpec {
        let parts = timestamp.timespecParts
        return TimeSpec(seconds: parts.seconds, nanoseconds: parts.nanoseconds)
    }
}

import SitefsAPI
