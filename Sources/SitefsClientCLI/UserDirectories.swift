import Foundation

/// Where a user's sitefs settings and caches live: the XDG folders when set, else under the
/// home folder.
///
/// The home folder is `$HOME` only when that folder belongs to the user running sitefs:
/// mount(8) starts the helper of a `user` fstab entry with `HOME=/root` while running it
/// as the user, and the user's sign-in is not in /root. Otherwise it is the home the
/// password database gives the user.
enum UserDirectories {
    static var home: URL {
        let uid = getuid()
        if let given = ProcessInfo.processInfo.environment["HOME"], !given.isEmpty {
            var info = stat()
            if stat(given, &info) == 0, info.st_uid == uid { return URL(fileURLWithPath: given) }
        }
        if let entry = getpwuid(uid), let directory = entry.pointee.pw_dir, directory.pointee != 0 {
            return URL(fileURLWithPath: String(cString: directory))
        }
        return FileManager.default.homeDirectoryForCurrentUser
    }

    /// `$XDG_CONFIG_HOME`, else ~/.config.
    static var configuration: URL { xdg("XDG_CONFIG_HOME") ?? home.appendingPathComponent(".config") }

    /// `$XDG_CACHE_HOME`, else ~/.cache.
    static var cache: URL { xdg("XDG_CACHE_HOME") ?? home.appendingPathComponent(".cache") }

    /// `$XDG_DATA_HOME`, else ~/.local/share.
    static var data: URL { xdg("XDG_DATA_HOME") ?? home.appendingPathComponent(".local/share") }

    /// An XDG variable, if set to an absolute path (the specification says to ignore others).
    private static func xdg(_ name: String) -> URL? {
        guard let value = ProcessInfo.processInfo.environment[name], value.hasPrefix("/") else { return nil }
        return URL(fileURLWithPath: value)
    }
}
