import Foundation

/// What fusermount3 will refuse when a user (not root) mounts, checked before the daemon
/// starts so `sitefs mount` can say what to do instead of "Operation not permitted".
/// fusermount3 stays the judge: anything these checks miss is reported from its own words
/// (`MountDaemon.fusermountMessages`).
enum MountPreflight {
    /// fuse3's configuration, where an administrator allows `allow_other` for users.
    static let fuseConfiguration = "/etc/fuse.conf"

    static func check(mountpoint: String, allowOther: Bool, configuration: String = fuseConfiguration) throws {
        guard getuid() != 0 else { return }  // root mounts directly, without fusermount3's rules
        if access(mountpoint, W_OK) != 0 {
            throw UserFacingError("you may not write to the mount point \(mountpoint) (permission denied), and a user can "
                                  + "only mount on a folder they may write to: use a folder of your own, such as ~/sites")
        }
        if allowOther, !userAllowOther(in: configuration) {
            throw UserFacingError("--allow-other needs the line `user_allow_other` in \(configuration), which only an "
                                  + "administrator can add; mount without --allow-other to keep the mount to yourself")
        }
    }

    /// True when the configuration file has the `user_allow_other` option (comments and
    /// blanks aside), as fusermount3 reads it.
    static func userAllowOther(in path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first?
                .trimmingCharacters(in: .whitespaces) == "user_allow_other"
        }
    }
}
