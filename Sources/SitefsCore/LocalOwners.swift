import Synchronization

/// Owners a document server does not keep, kept by the mount while it runs, by inode (an
/// inode outlives the upload that gives a new file its server identifier): what root set
/// with `chown`, and who made an item when another user made it through `--allow-other`.
/// Everything else shows the mounting user (and `--file-group`). The kernel checks every
/// access against what is shown (`default_permissions`), so a file root gave to another
/// user is that user's on this mount, as on a local disk; the server and other mounts never
/// see it, and a remount shows the mounting user again. Bounded: past `limit` entries the
/// table starts afresh.
///
/// Lock order: a leaf.
final class LocalOwners: Sendable {
    struct Owner: Equatable {
        var uid: UInt32
        var gid: UInt32
    }

    static let limit = 100_000
    private let table = Mutex<[InodeNumber: Owner]>([:])

    func owner(of inode: InodeNumber) -> Owner? { table.withLock { $0[inode] } }

    func set(_ owner: Owner, of inode: InodeNumber) {
        table.withLock { table in
            if table[inode] == nil, table.count >= Self.limit { table.removeAll(keepingCapacity: true) }
            table[inode] = owner
        }
    }

    func overlay(_ attributes: FileAttributes) -> FileAttributes {
        guard let owner = owner(of: attributes.inode) else { return attributes }
        var result = attributes
        result.uid = owner.uid
        result.gid = owner.gid
        return result
    }
}
