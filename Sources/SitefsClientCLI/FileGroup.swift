import Glibc

/// `--file-group`: the group every item on the mount shows (its owner is always the user
/// who mounted). With `--allow-other`, the group's members then get the group's permission
/// bits (`chmod g+w` lets a team write) and everyone else the others' bits, checked by the
/// kernel. Only a group the mounting user belongs to may be named (root may name any), as
/// `chgrp` allows: a mount cannot hand out a group its user does not have.
enum FileGroup {
    /// The group id `name` (a group name or number) stands for, or why it cannot be used.
    static func resolve(_ name: String) throws(UserFacingError) -> gid_t {
        let gid: gid_t
        if let number = gid_t(name), number != gid_t.max {
            gid = number
        } else if let entry = getgrnam(name) {
            gid = entry.pointee.gr_gid
        } else {
            throw UserFacingError("--file-group \(name): no such group")
        }
        guard geteuid() == 0 || belongs(to: gid) else {
            throw UserFacingError("--file-group \(name): you are not a member of that group (see `id`)")
        }
        return gid
    }

    private static func belongs(to gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let found = getgroups(count, &groups)
        return found > 0 && groups.prefix(Int(found)).contains(gid)
    }
}
