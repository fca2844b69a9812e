import CFuse
import SitefsCore

/// The reply buffer of one readdir / readdirplus request, filled with `fuse_add_direntry`
/// or `fuse_add_direntry_plus` up to the size the kernel asked for.
///
/// `append` is the core's `emit`: it returns false, placing nothing, when the next entry
/// does not fit, which is the contract's "must come again next call". Each entry's offset
/// is its `nextOffset`, which the kernel hands back as the next request's offset.
///
/// With `plus`, every entry placed with an `Entry` carries a lookup reference the core has
/// counted; `countedInodes` records them so the caller can give them back if the reply
/// never reaches the kernel.
///
/// Memory: allocated per request and freed on deinit, after the reply has been written.
final class DirectoryReplyBuffer {
    private let request: fuse_req_t
    private let plus: Bool
    private let storage: UnsafeMutableRawBufferPointer
    private(set) var used = 0
    private(set) var countedInodes: [InodeNumber] = []

    init(request: fuse_req_t, capacity: Int, plus: Bool) {
        self.request = request
        self.plus = plus
        self.storage = .allocate(byteCount: max(capacity, 0), alignment: 8)
    }

    deinit {
        storage.deallocate()
    }

    var isEmpty: Bool { used == 0 }

    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[0..<used])
    }

    func append(_ entry: DirectoryEntry) -> Bool {
        let remaining = storage.count - used
        let offset = off_t(Int64(bitPattern: entry.nextOffset))
        let destination = storage.baseAddress.map { ($0 + used).assumingMemoryBound(to: CChar.self) }
        let needed: Int = withCString(entry.name) { name in
            if plus {
                var parameters = entry.entry.map(FUSEConversions.entryParameters)
                    ?? FUSEConversions.unlinkedEntryParameters(inode: entry.inode, mode: entry.mode)
                return fuse_add_direntry_plus(request, destination, remaining, name, &parameters, offset)
            } else {
                var attributes = sitefs_stat_zero()
                attributes.st_ino = ino_t(entry.inode)
                attributes.st_mode = entry.mode
                return fuse_add_direntry(request, destination, remaining, name, &attributes, offset)
            }
        }
        // fuse_add_direntry* writes nothing and returns the size it would need when that
        // is more than `remaining`.
        guard needed <= remaining else { return false }
        used += needed
        if plus, let counted = entry.entry {
            countedInodes.append(counted.attributes.inode)
        }
        return true
    }

    private func withCString<R>(_ name: FileName, _ body: (UnsafePointer<CChar>) -> R) -> R {
        (name.bytes + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
