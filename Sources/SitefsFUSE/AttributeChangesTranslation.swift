import CFuse
import Glibc
import SitefsCore

/// setattr's `to_set` bits and `struct stat` to the core's `AttributeChanges`.
///
/// Ignored bits: FUSE_SET_ATTR_CTIME (only sent with the writeback cache, which is off),
/// the KILL_SUID/KILL_SGID/KILL_PRIV hints (FUSE_CAP_HANDLE_KILLPRIV is off, so the kernel
/// clears set-id bits itself through an explicit mode change), FORCE/FILE/OPEN/TOUCH and
/// TIMES_SET (not produced by the kernel's FUSE protocol for this API).
enum AttributeChangesTranslation {
    static func changes(_ attributes: Glibc.stat, toSet: Int32) -> AttributeChanges {
        let bits = UInt32(bitPattern: toSet)
        func has(_ flag: Int32) -> Bool { bits & UInt32(bitPattern: flag) != 0 }

        var changes = AttributeChanges()
        if has(FUSE_SET_ATTR_MODE) { changes.mode = attributes.st_mode }
        if has(FUSE_SET_ATTR_UID) { changes.uid = attributes.st_uid }
        if has(FUSE_SET_ATTR_GID) { changes.gid = attributes.st_gid }
        if has(FUSE_SET_ATTR_SIZE) { changes.size = UInt64(clamping: attributes.st_size) }
        // utimensat(UTIME_NOW) arrives as ATIME|ATIME_NOW: NOW wins, the stat time is unset.
        if has(FUSE_SET_ATTR_ATIME_NOW) {
            changes.accessTime = .now
        } else if has(FUSE_SET_ATTR_ATIME) {
            changes.accessTime = .at(FUSEConversions.timeSpec(attributes.st_atim))
        }
        if has(FUSE_SET_ATTR_MTIME_NOW) {
            changes.modificationTime = .now
        } else if has(FUSE_SET_ATTR_MTIME) {
            changes.modificationTime = .at(FUSEConversions.timeSpec(attributes.st_mtim))
        }
        return changes
    }
}
