import SitefsProvider

/// Item metadata -> `stat` fields. Capabilities become permission bits, so a read-only
/// grant shows 0444/0555 and the kernel refuses writes before they reach us.
enum AttributeMapping {
    static let directoryType: UInt32 = 0o040000
    static let regularType: UInt32 = 0o100000

    static func mode(for item: ProviderItem, readOnlyMount: Bool) -> UInt32 {
        let writable = item.isWritable && !readOnlyMount
        switch item.kind {
        case .site, .folder: return directoryType | (writable ? 0o755 : 0o555)
        case .file: return regularType | (writable ? 0o644 : 0o444)
        }
    }

    static func attributes(inode: InodeNumber, item: ProviderItem, size: Int64? = nil, modified: TimeSpec? = nil,
                           configuration: FilesystemConfiguration) -> FileAttributes {
        let bytes = UInt64(max(0, size ?? item.size))
        let time = modified ?? timespec(item.modified)
        return FileAttributes(
            inode: inode, size: item.kind == .file ? bytes : 4096, blocks: (bytes + 511) / 512,
            mode: mode(for: item, readOnlyMount: configuration.readOnly),
            linkCount: item.kind == .file ? 1 : 2, uid: configuration.uid, gid: configuration.gid,
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
