import CFuse
import Glibc
import SitefsCore

/// Core value types to the C structs libfuse replies with.
///
/// The structs are zeroed first (through the shim) so fields the core does not decide
/// (st_dev, st_rdev, padding, fuse_file_info flags) are never garbage.
enum FUSEConversions {
    /// What `st_blksize` reports for a file: the preferred I/O size tools like `cp` and
    /// `cat` (and stdio) size their buffers by. Without a writeback cache every write(2) is
    /// one round trip to the daemon, so 1 MiB (libfuse's max_write, as NFS reports its
    /// wsize) instead of 4 KiB makes `cat` write in 1 MiB requests instead of 128 KiB ones:
    /// writing 64 MiB into the mount took about half the time (scripts/bench, write case).
    static let fileBlockSize = 1 << 20
    /// What `st_blksize` reports for anything else. glibc sizes its `getdents` buffer for a
    /// directory by it, which decides how many entries each readdir request asks the core
    /// for; the listing path is tuned and measured at this size.
    static let otherBlockSize = 4096

    static func stat(_ attributes: FileAttributes) -> Glibc.stat {
        var result = sitefs_stat_zero()
        result.st_ino = ino_t(attributes.inode)
        result.st_mode = attributes.mode
        result.st_nlink = nlink_t(attributes.linkCount)
        result.st_uid = attributes.uid
        result.st_gid = attributes.gid
        result.st_size = off_t(clamping: attributes.size)
        result.st_blocks = blkcnt_t(clamping: attributes.blocks)
        result.st_blksize = blksize_t(attributes.mode & S_IFMT == S_IFREG ? fileBlockSize : otherBlockSize)
        result.st_atim = timespec(attributes.accessTime)
        result.st_mtim = timespec(attributes.modificationTime)
        result.st_ctim = timespec(attributes.changeTime)
        return result
    }

    static func timespec(_ time: TimeSpec) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))
    }

    static func timeSpec(_ time: Glibc.timespec) -> TimeSpec {
        TimeSpec(seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }

    static func entryParameters(_ entry: Entry) -> fuse_entry_param {
        var result = sitefs_entry_param_zero()
        result.ino = entry.attributes.inode
        result.generation = entry.generation
        result.attr = stat(entry.attributes)
        result.attr_timeout = entry.attributeTimeout
        result.entry_timeout = entry.entryTimeout
        return result
    }

    /// A readdirplus entry that carries no lookup: `ino` 0 tells the kernel not to link
    /// (or count) it, while `attr.st_ino`/`st_mode` still give the dirent its number and type.
    static func unlinkedEntryParameters(inode: InodeNumber, mode: UInt32) -> fuse_entry_param {
        var result = sitefs_entry_param_zero()
        result.attr.st_ino = ino_t(inode)
        result.attr.st_mode = mode
        return result
    }

    /// `directWritesAreCoherent`: see `SessionState.directWritesAreCoherent`.
    static func fileInfo(_ open: OpenReply, flags: Int32, directWritesAreCoherent: Bool) -> fuse_file_info {
        var result = sitefs_fi_make(open.handle)
        result.flags = flags
        let direct = open.directIO || (open.writesBypassCache && directWritesAreCoherent)
        sitefs_fi_set_direct_io(&result, direct ? 1 : 0)
        sitefs_fi_set_keep_cache(&result, open.keepCache ? 1 : 0)
        return result
    }

    static func statvfs(_ statistics: FilesystemStatistics) -> Glibc.statvfs {
        var result = sitefs_statvfs_zero()
        result.f_bsize = UInt(statistics.blockSize)
        result.f_frsize = UInt(statistics.blockSize)
        result.f_blocks = fsblkcnt_t(statistics.blocks)
        result.f_bfree = fsblkcnt_t(statistics.freeBlocks)
        result.f_bavail = fsblkcnt_t(statistics.availableBlocks)
        result.f_files = fsfilcnt_t(statistics.files)
        result.f_ffree = fsfilcnt_t(statistics.freeFiles)
        result.f_favail = fsfilcnt_t(statistics.freeFiles)
        result.f_namemax = UInt(statistics.maximumNameLength)
        return result
    }
}
