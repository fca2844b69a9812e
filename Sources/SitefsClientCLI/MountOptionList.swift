import ArgumentParser

/// The mount(8) form of `sitefs mount`: `sitefs URL MOUNTPOINT -o cache_dir=...,read_only`.
///
/// fuse3's `mount.fuse` runs exactly that for `mount -t fuse.sitefs URL /mnt -o OPTIONS`
/// and for an /etc/fstab line of type `fuse.sitefs`, as it does for sshfs. Before the
/// argument parser sees the command line, the leading URL is taken for `mount`, and every
/// `-o` list becomes the flags it names: `key=value` is `--key value` and `key` is `--key`,
/// with underscores for dashes, so every flag of `sitefs mount` has an `-o` form without a
/// second list of them to keep in step. Options meant for mount(8) itself are dropped, and
/// the kernel's own mount flags are handed to the FUSE mount.
enum MountOptionList {
    /// fstab and mount(8) options that concern mount(8) or systemd, not the filesystem.
    static let ignored: Set<String> = ["rw", "defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group",
                                       "_netdev", "nofail", "loud", "silent"]
    /// Mount flags libfuse passes to the kernel mount (fusermount3 enforces nosuid and nodev
    /// for users whatever is asked).
    static let kernelFlags: Set<String> = ["suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
                                           "noatime", "nodiratime", "dirsync"]

    /// `arguments` (without the program name) with a leading URL taken for `mount` and, for
    /// `mount`, every `-o LIST` / `-oLIST` replaced by the flags it stands for.
    static func rewrite(_ arguments: [String], subcommands: Set<String>) throws -> [String] {
        guard let first = arguments.first else { return arguments }
        if first.hasPrefix("-") || (subcommands.contains(first) && first != "mount") { return arguments }
        var rest = first == "mount" ? Array(arguments.dropFirst()) : arguments
        var result = ["mount"]
        var kernel: [String] = []
        while !rest.isEmpty {
            let argument = rest.removeFirst()
            let list: String
            if argument == "-o" {
                guard !rest.isEmpty else { throw ValidationError("-o needs a list of options, e.g. -o cache_dir=/path,read_only") }
                list = rest.removeFirst()
            } else if argument.hasPrefix("-o"), !argument.hasPrefix("--") {
                list = String(argument.dropFirst(2))
            } else {
                result.append(argument)
                continue
            }
            for option in split(list) {
                let (key, value) = option.firstIndex(of: "=").map { (String(option[..<$0]), String(option[option.index(after: $0)...])) }
                    ?? (option, nil)
                if key.isEmpty { throw ValidationError("-o: an option without a name in \"\(list)\"") }
                if ignored.contains(key) || key.hasPrefix("x-") || key == "comment" { continue }
                if kernelFlags.contains(key), value == nil {
                    kernel.append(key)
                } else if key == "ro", value == nil {
                    result.append("--read-only")
                } else {
                    guard key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }), key.first?.isLetter == true else {
                        throw ValidationError("-o: \"\(key)\" is not an option name")
                    }
                    result.append("--" + key.replacingOccurrences(of: "_", with: "-"))
                    if let value { result.append(value) }
                }
            }
        }
        if !kernel.isEmpty { result += ["--kernel-flags", kernel.joined(separator: ",")] }
        return result
    }

    /// Splits at commas not escaped by a backslash (a path may hold one: `cache_dir=/a\,b`).
    static func split(_ list: String) -> [String] {
        var options: [String] = []
        var current = ""
        var escaped = false
        for character in list {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "," {
                if !current.isEmpty { options.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if escaped { current.append("\\") }
        if !current.isEmpty { options.append(current) }
        return options
    }
}
