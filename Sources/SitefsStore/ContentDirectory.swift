import Foundation
import SitefsProvider

#if canImport(Glibc)
import Glibc
#endif

/// The cache directory's content areas:
/// - `content/`: local copies of files being read or written (deleted once closed and
///   confirmed on the server, so with nothing open and nothing pending it is empty);
/// - `staging/`: frozen snapshots of saved content waiting for upload, fsynced before the
///   save returns, so an edit survives the daemon.
public struct ContentDirectory: Sendable {
    public let content: URL
    public let staging: URL

    public init(cacheDirectory: URL) throws {
        content = cacheDirectory.appendingPathComponent("content", isDirectory: true)
        staging = cacheDirectory.appendingPathComponent("staging", isDirectory: true)
        for directory in [content, staging] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
    }

    /// Where an item's local copy lives. Identifiers are hex-encoded: server ids are opaque
    /// and may hold any character.
    public func copyPath(for identifier: ItemIdentifier) -> String {
        content.appendingPathComponent("\(Self.hex(identifier.site))-\(Self.hex(identifier.id))").path
    }

    /// Copies `descriptor`'s whole content into a new staging file and fsyncs it.
    public func stage(from descriptor: Int32) throws(ProviderError) -> String {
        let path = staging.appendingPathComponent(UUID().uuidString).path
        let target = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard target >= 0 else { throw .localIO("create \(path): \(Self.lastError)") }
        defer { close(target) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { unlink(path); throw .localIO("read local copy: \(Self.lastError)") }
            if count == 0 { break }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { write(target, $0.baseAddress! + written, count - written) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { unlink(path); throw .localIO("write \(path): \(Self.lastError)") }
                written += result
            }
            offset += Int64(count)
        }
        guard fsync(target) == 0 else { unlink(path); throw .localIO("fsync \(path): \(Self.lastError)") }
        return path
    }

    /// Removes staging files nothing refers to (a crash between snapshot and journal
    /// commit, i.e. a save whose close() never returned) and local copies of an earlier run
    /// (their saves, if any, are in staging). Call once at mount, before any open.
    public func removeLeftovers(keeping staged: Set<String>) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? [] {
            let path = staging.appendingPathComponent(name).path
            if !staged.contains(path) { unlink(path) }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: content.path)) ?? [] {
            unlink(content.appendingPathComponent(name).path)
        }
    }

    public static var lastError: String { String(cString: strerror(errno)) }

    private static func hex(_ text: String) -> String {
        text.utf8.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
