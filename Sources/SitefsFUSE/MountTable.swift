import SystemPackage

/// Reads `/proc/self/mountinfo`: which paths are mount points, and of what.
///
/// Used instead of stat(2) on the mountpoint because stat of our own mount would be a
/// FUSE request, and before the request loop runs nobody would answer it (nor would a dead
/// daemon's). The one mount table of the project: the daemon and the `sitefs` commands ask it.
public enum MountTable {
    struct Mount: Equatable {
        /// "major:minor" of the mounted filesystem.
        var device: String
        var mountPoint: String
        var fileSystemType: String
        var source: String
    }

    static func mounts() -> [Mount] {
        guard let text = try? readAll(FilePath("/proc/self/mountinfo")) else { return [] }
        return text.split(separator: "\n").compactMap(parse)
    }

    /// Whether `path` (absolute, without `.` or `..`) is where something is mounted.
    public static func isMountPoint(_ path: String) -> Bool {
        mounts().contains { $0.mountPoint == path }
    }

    /// One line: `id parent major:minor root mountpoint options [optional...] - fstype source superoptions`.
    static func parse(_ line: Substring) -> Mount? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count >= 10, let separator = fields.firstIndex(of: "-"), separator + 2 < fields.count else {
            return nil
        }
        return Mount(device: String(fields[2]), mountPoint: unescaped(fields[4]),
                     fileSystemType: String(fields[separator + 1]), source: unescaped(fields[separator + 2]))
    }

    /// mountinfo writes space, tab, newline and backslash as three-digit octal escapes.
    static func unescaped(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
               let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func readAll(_ path: FilePath) throws -> String {
        let descriptor = try FileDescriptor.open(path, .readOnly)
        return try descriptor.closeAfter {
            var data: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }
                if count == 0 { break }
                data.append(contentsOf: chunk[0..<count])
            }
            return String(decoding: data, as: UTF8.self)
        }
    }
}
