import Foundation

/// A small tmpfs mounted on a folder: a disk that fills up (ENOSPC) or turns read-only for
/// real, for what must hold when the cache's disk does. Mounting needs root, which CI has;
/// tests using it are enabled by `SmallDisk.canMount`.
public final class SmallDisk {
    public let path: String
    private var filler: String { path + "/.filler" }
    private var mounted = true

    public static var canMount: Bool { getuid() == 0 }

    /// Mounts a tmpfs of `bytes` on `path` (made if missing), or on a new temporary folder.
    public init(bytes: Int, at path: String? = nil) throws {
        self.path = path ?? FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-small-disk-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
        try Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes),mode=0700", "tmpfs", self.path])
    }

    deinit { unmount() }

    /// Writes a file until the disk is full: every later allocation fails with ENOSPC.
    public func fill() throws {
        let descriptor = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        var chunk = [UInt8](repeating: 0x55, count: 64 * 1024)
        var size = chunk.count
        while size > 0 {
            let written = chunk.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, size) }
            if written < 0 {
                guard errno == ENOSPC else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
                size /= 2
            }
        }
    }

    /// Room again.
    public func free() { unlink(filler) }

    public func remount(readOnly: Bool) throws {
        try Self.run("/bin/mount", ["-o", "remount,\(readOnly ? "ro" : "rw")", path])
    }

    /// Unmounts (lazily: a process may still hold a file) and removes the folder; once.
    public func unmount() {
        guard mounted else { return }
        mounted = false
        try? Self.run("/bin/umount", ["-l", path])
        rmdir(path)
    }

    private static func run(_ program: String, _ arguments: [String]) throws {
        let outcome = try SitefsTestSupport.run(URL(fileURLWithPath: program), arguments, timeout: 30)
        guard outcome.status == 0 else {
            throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "\(program) \(arguments): \(outcome.err)"])
        }
    }
}
