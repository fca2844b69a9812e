import Foundation

/// Mount points: is something mounted there, and taking it down.
enum MountTable {
    /// True when `path` is the root of a mount (its device differs from its parent's).
    static func isMountPoint(_ path: String) -> Bool {
        let resolved = URL(fileURLWithPath: path).standardizedFileURL.path
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 1 && unescape(String(fields[1])) == resolved
        }
    }

    /// `fusermount3 -u`, falling back to umount(2) when that is missing and we are root.
    static func unmount(_ path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        process.arguments = ["-u", path]
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
            process.waitUntilExit()
            if process.terminationStatus == 0 { return }
        } catch {}
        if getuid() == 0, umount(path) == 0 { return }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        throw UserFacingError("cannot unmount \(path): \(message.isEmpty ? String(cString: strerror(errno)) : message)")
    }

    /// /proc/mounts escapes space, tab, newline and backslash as octal.
    private static func unescape(_ field: String) -> String {
        var result = ""
        var iterator = field.makeIterator()
        while let character = iterator.next() {
            if character == "\\" {
                let digits = String([iterator.next(), iterator.next(), iterator.next()].compactMap { $0 })
                if let value = UInt8(digits, radix: 8) { result.append(Character(Unicode.Scalar(value))) }
            } else {
                result.append(character)
            }
        }
        return result
    }
}
