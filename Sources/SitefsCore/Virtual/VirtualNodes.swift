import SitefsProvider
import Synchronization

/// What the mount shows that is not an item on the server: the search and versions folders,
/// looked up by name at the root and never listed there (a walk of the mount, `find`, `rsync`
/// or a backup, never wanders into them).
///
/// - `MOUNT/.search/QUERY/`: the files matching QUERY (see `SearchFolderName`), each under the
///   inode of the file itself, so what is opened there is the document, not a copy.
/// - `MOUNT/.versions/PATH/`: for a site or folder at PATH, its children as folders; for a
///   file, its stored versions as read-only files.
enum VirtualNode: Hashable, Sendable {
    case searchRoot
    /// A query folder: its name as the kernel gave it.
    case searchFolder(name: String)
    case versionsRoot
    /// The versions view of a site or folder: its children, each a folder.
    case versionsMirror(ItemIdentifier)
    /// The versions view of a file: a folder of its versions.
    case versionList(ItemIdentifier)
    /// One stored version of a file, read-only.
    case version(file: ItemIdentifier, version: String)

    var isDirectory: Bool {
        if case .version = self { return false }
        return true
    }
}

/// Inode numbers of virtual nodes, from a range the item inodes never reach (those count up
/// from 2), with the kernel's lookup counts: a node the kernel has forgotten is dropped, so
/// the table holds only what the kernel may still ask about (the two roots stay).
final class VirtualNodeTable: Sendable {
    static let firstInode: InodeNumber = 1 << 56
    static let searchRootInode = firstInode
    static let versionsRootInode = firstInode + 1

    private struct State {
        var nodes: [InodeNumber: VirtualNode] = [VirtualNodeTable.searchRootInode: .searchRoot,
                                                  VirtualNodeTable.versionsRootInode: .versionsRoot]
        var inodes: [VirtualNode: InodeNumber] = [.searchRoot: VirtualNodeTable.searchRootInode,
                                                  .versionsRoot: VirtualNodeTable.versionsRootInode]
        var lookups: [InodeNumber: UInt64] = [:]
        var next: InodeNumber = VirtualNodeTable.firstInode + 16
    }

    /// Lock order: a leaf.
    private let state = Mutex(State())

    static func isVirtual(_ inode: InodeNumber) -> Bool { inode >= firstInode }

    func node(_ inode: InodeNumber) -> VirtualNode? { state.withLock { $0.nodes[inode] } }

    /// The node's inode, assigned on first sight. Counts no lookup: a plain listing shows
    /// inode numbers the kernel does not keep.
    func inode(for node: VirtualNode) -> InodeNumber {
        state.withLock { state in
            if let known = state.inodes[node] { return known }
            let inode = state.next
            state.next += 1
            state.nodes[inode] = node
            state.inodes[node] = inode
            return inode
        }
    }

    /// One more kernel reference (an entry reply).
    func countLookup(_ inode: InodeNumber) {
        state.withLock { $0.lookups[inode, default: 0] += 1 }
    }

    func forget(_ inode: InodeNumber, lookups: UInt64) {
        state.withLock { state in
            guard let current = state.lookups[inode] else { return }
            guard current > lookups else {
                state.lookups[inode] = nil
                guard inode != Self.searchRootInode, inode != Self.versionsRootInode,
                      let node = state.nodes.removeValue(forKey: inode) else { return }
                state.inodes[node] = nil
                return
            }
            state.lookups[inode] = current - lookups
        }
    }
}
