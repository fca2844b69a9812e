import CLinux
import Foundation
import SitefsProvider

#if canImport(Glibc)
import Glibc
import SitefsConcurrency
#endif

/// The cache directory's content areas:
/// - `content/`: local copies of files being read or written (deleted once closed and
///   confirmed on the server, large ones in the background, small ones emptied and kept as
///   spares for new copies, so with nothing open, nothing pending and `unlinker` drained it
///   holds only the pinned files' copies and empty spares: see `SpareCopyFiles`);
/// - `staging/`: frozen snapshots of saved content waiting for upload, fsynced before the
///   save returns, so an edit survives the daemon.
public struct ContentDirectory: Sendable {
    public let content: URL
    public let staging: URL
    /// Deletes what is done with off the caller's path (see BackgroundUnlinker).
    public let unlinker = BackgroundUnlinker()
    /// Discarded copies kept for new ones (see `SpareCopyFiles`).
    let spares: SpareCopyFiles

    /// `content` as a path: `copyPath` runs for every file created or opened.
    private let contentPath: String

    public init(cacheDirectory: URL) throws {
        content = cacheDirectory.appendingPathComponent("content", isDirectory: true)
        contentPath = content.path
        spares = SpareCopyFiles(folder: contentPath)
        staging = cacheDirectory.appendingPathComponent("staging", isDirectory: true)
        for directory in [content, staging] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
    }

    /// Where an item's local copy lives. Identifiers are hex-encoded: server ids are opaque
    /// and may hold any character.
    public func copyPath(for identifier: ItemIdentifier) -> String {
        contentPath + "/" + Self.hex(identifier.site) + "-" + Self.hex(identifier.id)
    }

    /// A new, empty local copy at `path`, open read and write: a spare (see `SpareCopyFiles`)
    /// where one is kept, else a file made there. Whatever was at `path` goes first: it may
    /// still be a staged snapshot's other link. -1 with errno set when it cannot be made.
    public func newCopy(at path: String) -> Int32 {
        unlink(path)
        if let descriptor = spares.take(as: path) { return descriptor }
        return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    }

    /// Closes and deletes a local copy's file: kept as a spare for the next new copy where it
    /// can be, deleted otherwise. Its name is free at once, so a new copy of the same item can
    /// be made there while a large one's blocks are freed in the background.
    public func discardCopy(at path: String, descriptor: Int32) {
        let kept = spares.keep(path, descriptor: descriptor)
        if descriptor >= 0 { close(descriptor) }
        if !kept { unlinker.delete(path, nameIsReused: true) }
    }

    /// Copies `descriptor`'s whole content into a new staging file, fsynced with the staging
    /// directory unless `durably` is false (the fallback where `stage(linking:descriptor:)`
    /// cannot link).
    public func stage(from descriptor: Int32, durably: Bool = true) throws(ProviderError) -> String {
        let path = staging.appendingPathComponent(UUID().uuidString).path
        let target = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard target >= 0 else { throw .localIO("create \(path): \(Self.lastError)") }
        defer { close(target) }
        guard Self.copyAll(from: descriptor, to: target) else { unlink(path); throw .localIO("copy to \(path): \(Self.lastError)") }
        guard durably else { return path }
        guard fsync(target) == 0 else { unlink(path); throw .localIO("fsync \(path): \(Self.lastError)") }
        try syncStaging(orRemove: path)
        return path
    }

    /// Snapshots the local copy at `path` (open as `descriptor`) without copying it: a hard
    /// link into staging, fsynced with the staging directory. Copying 64 MiB cost about as
    /// much as its fsync (scripts/bench, write case), and the copy's pages were written to
    /// the disk a second time. Nil where the cache's filesystem has no hard links, or when
    /// `path` is not that file: then the caller copies (`stage(from:)`). After this the copy
    /// must not change in place (see LocalCopy.unshare).
    ///
    /// `durably` false skips both fsyncs: for a caller that keeps the bytes durable
    /// elsewhere (a small save's content in its journal row, see `SaveJob.content`). The
    /// snapshot then survives the daemon but not a power cut, and is written again from
    /// that copy at the next start.
    public func stage(linking path: String, descriptor: Int32, durably: Bool = true) throws(ProviderError) -> String? {
        let staged = staging.appendingPathComponent(UUID().uuidString).path
        guard link(path, staged) == 0 else { return nil }
        var copied = stat(), linked = stat()
        guard fstat(descriptor, &copied) == 0, lstat(staged, &linked) == 0,
              copied.st_ino == linked.st_ino, copied.st_dev == linked.st_dev else {
            unlink(staged)
            return nil
        }
        guard durably else { return staged }
        guard fsync(descriptor) == 0 else { unlink(staged); throw .localIO("fsync \(path): \(Self.lastError)") }
        try syncStaging(orRemove: staged)
        return staged
    }

    /// Makes the snapshot at `path` hold exactly `content`, durably: a small save's snapshot,
    /// staged without an fsync (its bytes were in the journal row), which a power cut may
    /// have emptied or lost. Written in place where the file is still there, so a local
    /// copy that shares it (a hard link) reads the same bytes; left alone when it already
    /// holds them.
    public static func restoreSnapshot(at path: String, content: [UInt8]) throws(ProviderError) {
        let file = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw .localIO("create \(path): \(Self.lastError)") }
        defer { close(file) }
        if Self.contents(of: file, size: content.count) == content { return }
        var written = 0
        while written < content.count {
            let count = content.withUnsafeBytes { pwrite(file, $0.baseAddress! + written, $0.count - written, off_t(written)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw .localIO("write \(path): \(Self.lastError)") }
            written += count
        }
        guard ftruncate(file, off_t(content.count)) == 0, fsync(file) == 0 else {
            throw .localIO("write \(path): \(Self.lastError)")
        }
        try syncFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    /// Makes a new snapshot's name in staging durable, not only its bytes: after a crash
    /// the journal names it, and a file whose directory entry was lost is a lost edit.
    /// Removes the snapshot `staged` when that fails.
    private func syncStaging(orRemove staged: String) throws(ProviderError) {
        do throws(ProviderError) {
            try Self.syncFolder(staging.path)
        } catch {
            unlink(staged)
            throw error
        }
    }

    /// Makes the names in `folder` durable (an fsync of the folder).
    private static func syncFolder(_ folder: String) throws(ProviderError) {
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if directory >= 0 { close(directory) } }
        guard directory >= 0, fsync(directory) == 0 else { throw .localIO("fsync \(folder): \(lastError)") }
    }

    /// The whole content of `descriptor` (read from offset 0) when it is exactly `size`
    /// bytes; nil when it is not (it changed, or a read failed).
    public static func contents(of descriptor: Int32, size: Int) -> [UInt8]? {
        guard size >= 0 else { return nil }
        // One byte more than expected, so a file that grew is told from one that did not.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, $0.count - filled, off_t(filled)) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            filled += count
        }
        guard filled == size else { return nil }
        bytes.removeLast()
        return bytes
    }

    /// Fills `descriptor` (from offset 0) with the content of the file at `path`.
    public static func copyFile(from path: String, to descriptor: Int32) -> Bool {
        let source = open(path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { return false }
        defer { close(source) }
        return copyAll(from: source, to: descriptor)
    }

    /// Copies everything from `source` (read from offset 0) to `target` (written from
    /// offset 0): in the kernel with copy_file_range where the filesystem can, else through
    /// a buffer.
    public static func copyAll(from source: Int32, to target: Int32) -> Bool {
        var inOffset: off_t = 0, outOffset: off_t = 0
        while true {
            let count = copy_file_range(source, &inOffset, target, &outOffset, 1 << 30, 0)
            if count > 0 { continue }
            if count == 0 { return true }
            if errno == EINTR { continue }
            if errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP { break }
            return false
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, $0.count, inOffset) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return false }
            if count == 0 { return true }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { pwrite(target, $0.baseAddress! + written, count - written, outOffset + off_t(written)) }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { return false }
                written += result
            }
            inOffset += off_t(count)
            outOffset += off_t(written)
        }
    }

    /// Removes staging files nothing refers to (a crash between snapshot and journal
    /// commit, i.e. a save whose close() never returned) and local copies of an earlier run
    /// (their saves, if any, are in staging) but the pinned ones in `kept`, with copies it
    /// had set aside to delete; its spares are kept for new copies (`SpareCopyFiles.adopt`).
    /// Call once at mount, before any open.
    public func removeLeftovers(keeping staged: Set<String>, copies kept: Set<String> = []) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? [] {
            let path = staging.appendingPathComponent(name).path
            if !staged.contains(path) { unlink(path) }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: content.path)) ?? []
        for name in names where !SpareCopyFiles.isSpare(named: name) {
            let path = content.appendingPathComponent(name).path
            if !kept.contains(path) { unlink(path) }
        }
        spares.adopt(names)
    }

    public static var lastError: String { String(cString: strerror(errno)) }

    /// Two lowercase hex digits per UTF-8 byte.
    private static func hex(_ text: String) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(text.utf8.count * 2)
        for byte in text.utf8 {
            encoded.append(digits[Int(byte >> 4)])
            encoded.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: encoded, as: UTF8.self)
    }
}
