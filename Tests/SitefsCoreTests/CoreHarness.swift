import Foundation
import Logging
import SitefsCore
import SitefsProvider
import SystemPackage
import Testing

/// A filesystem core over an in-memory backend, driven as the FUSE adapter would drive it.
struct CoreHarness {
    let backend: InMemoryBackend
    let filesystem: SitefsFilesystem
    let cacheDirectory: URL
    let context = RequestContext(uid: 1000, gid: 1000, pid: 1)

    /// A fresh core; pass `reusing` to start a second one on the same backend and cache
    /// directory (a remount after a crash).
    init(pageSize: Int = 200, readOnly: Bool = false, reusing previous: CoreHarness? = nil) throws {
        backend = previous?.backend ?? InMemoryBackend()
        cacheDirectory = previous?.cacheDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-core-\(UUID().uuidString)")
        var logger = Logger(label: "sitefs-core-test")
        logger.logLevel = .critical
        filesystem = try SitefsFilesystem(
            backend: backend,
            configuration: FilesystemConfiguration(pageSize: pageSize, uid: 1000, gid: 1000, readOnly: readOnly),
            cacheDirectory: cacheDirectory, logger: logger)
    }

    func remove() { try? FileManager.default.removeItem(at: cacheDirectory) }

    func lookup(_ parent: InodeNumber, _ name: String) throws(Errno) -> Entry {
        try filesystem.lookup(parent: parent, name: FileName(name), context: context)
    }

    /// Every entry of a directory read through `readDirectory`, with the kernel's buffer
    /// holding at most `perCall` entries per call.
    func list(_ inode: InodeNumber, plus: Bool = false, perCall: Int = 1000) throws(Errno) -> [DirectoryEntry] {
        let handle = try filesystem.openDirectory(inode, flags: 0, context: context)
        defer { filesystem.releaseDirectory(inode, handle: handle) }
        var all: [DirectoryEntry] = []
        var offset: UInt64 = 0
        while true {
            var batch: [DirectoryEntry] = []
            try filesystem.readDirectory(inode, handle: handle, offset: offset, plus: plus, context: context) { entry in
                guard batch.count < perCall else { return false }
                batch.append(entry)
                return true
            }
            if batch.isEmpty { return all }
            all += batch
            offset = batch.last!.nextOffset
        }
    }

    func readAll(_ inode: InodeNumber, flags: Int32 = O_RDONLY) throws -> [UInt8] {
        let handle = try filesystem.open(inode, flags: flags, context: context).handle
        defer { filesystem.release(inode, handle: handle, flags: flags) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let offset = Int64(result.count)
            let count = try buffer.withUnsafeMutableBytes { (raw) throws -> Int in
                try filesystem.read(inode, handle: handle, offset: offset, size: 4096, into: raw)
            }
            if count == 0 { return result }
            result += buffer[0..<count]
        }
    }

    func write(_ inode: InodeNumber, handle: HandleID, _ bytes: [UInt8], at offset: Int64 = 0) throws {
        _ = try bytes.withUnsafeBytes { (raw) throws -> Int in
            try filesystem.write(inode, handle: handle, offset: offset, data: raw, flags: 0)
        }
    }

    var contentFiles: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.appendingPathComponent("content").path)) ?? []
    }
}
