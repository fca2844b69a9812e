import Foundation
import Logging
import SitefsCore
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage
import SitefsTestSupport
import Testing
import SitefsConcurrency

/// A filesystem core over an in-memory backend, driven as the FUSE adapter would drive it.
struct CoreHarness {
    let backend: InMemoryBackend
    let filesystem: SitefsFilesystem
    let cacheDirectory: URL
    let context = RequestContext(uid: 1000, gid: 1000, pid: 1)
    /// What ages the cache and times the uploader: the system clock, or a manual one that
    /// moves only when the test says (`clock.advance`).
    let clock: MountClock

    /// A fresh core; pass `reusing` to start a second one on the same backend and cache
    /// directory (a remount after a crash).
    /// `backend` and `cacheDirectory` do the same without keeping the earlier core alive.
    /// `writeBackDelay`: every change waits this long (most tests hold work still with it);
    /// `delays`, when given, is the policy instead (tests of the mount's own policy).
    init(pageSize: Int = 200, readOnly: Bool = false, writeBackDelay: Duration = .seconds(2), delays: WriteBackDelays? = nil,
         metadataMaxAge: Duration = .seconds(60),
         reusing previous: CoreHarness? = nil, backend reusedBackend: InMemoryBackend? = nil, cacheDirectory reusedDirectory: URL? = nil,
         clock: MountClock = .system, changePollInterval: Duration = .seconds(3), cacheSizeLimit: Int64? = nil,
         rescueDirectory: String? = nil, backgroundReaders: ProcessMatcher = .none, thumbnails: ThumbnailSettings? = nil) throws {
        backend = previous?.backend ?? reusedBackend ?? InMemoryBackend()
        self.clock = previous?.clock ?? clock
        cacheDirectory = previous?.cacheDirectory ?? reusedDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-core-\(UUID().uuidString)")
        var logger = Logger(label: "sitefs-core-test")
        logger.logLevel = .critical
        var configuration = FilesystemConfiguration(pageSize: pageSize, metadataMaxAge: metadataMaxAge,
                                                    changePollInterval: changePollInterval, uid: 1000, gid: 1000,
                                                    readOnly: readOnly, writeBackDelay: writeBackDelay, namespaceWait: .seconds(2),
                                                    cacheSizeLimit: cacheSizeLimit, clock: clock)
        configuration.writeBackDelays = delays ?? .uniform(writeBackDelay)
        configuration.rescueDirectory = rescueDirectory
        configuration.backgroundReaders = backgroundReaders
        configuration.thumbnails = thumbnails
        filesystem = try SitefsFilesystem(backend: backend, configuration: configuration, cacheDirectory: cacheDirectory, logger: logger)
    }

    func remove() { try? FileManager.default.removeItem(at: cacheDirectory) }

    /// Starts what a live mount runs in the background (the change feed, the pin keeper), as
    /// the kernel's INIT does; the test ends it with `filesystem.unmounting()`.
    func mount() { filesystem.mounted(invalidator: NoKernel()) }

    /// Takes no invalidations: the core under test is not mounted in a kernel.
    struct NoKernel: KernelCacheInvalidator {
        func invalidateEntry(parent: InodeNumber, name: FileName) {}
        func invalidateInode(_ inode: InodeNumber, offset: Int64, length: Int64) {}
    }

    /// create + write + close, as `echo > NAME` does; returns the new file's inode.
    @discardableResult
    func createFile(_ parent: InodeNumber, _ name: String, _ text: String) throws -> InodeNumber {
        let (entry, open) = try filesystem.create(parent: parent, name: FileName(name), mode: 0o644, flags: O_WRONLY | O_CREAT,
                                                  context: context)
        try write(entry.attributes.inode, handle: open.handle, Array(text.utf8))
        try filesystem.flush(entry.attributes.inode, handle: open.handle, context: context)
        filesystem.release(entry.attributes.inode, handle: open.handle, flags: O_WRONLY)
        return entry.attributes.inode
    }

    /// What an editor saving in place does: open with O_TRUNC, write, flush, close.
    func saveInPlace(_ inode: InodeNumber, _ text: String) throws {
        let handle = try filesystem.open(inode, flags: O_WRONLY | O_TRUNC, context: context).handle
        try write(inode, handle: handle, Array(text.utf8))
        try filesystem.flush(inode, handle: handle, context: context)
        filesystem.release(inode, handle: handle, flags: O_WRONLY)
    }

    func rename(_ parent: InodeNumber, _ name: String, to newName: String, in newParent: InodeNumber? = nil) throws(Errno) {
        try filesystem.rename(parent: parent, name: FileName(name), newParent: newParent ?? parent, newName: FileName(newName),
                              flags: 0, context: context)
    }

    func unlink(_ parent: InodeNumber, _ name: String) throws(Errno) {
        try filesystem.unlink(parent: parent, name: FileName(name), context: context)
    }

    func xattr(_ inode: InodeNumber, _ name: String) throws(Errno) -> String {
        String(decoding: try filesystem.getExtendedAttribute(inode, name: name, context: context), as: UTF8.self)
    }

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


    /// True when no snapshot is left in staging (every save confirmed or dropped).
    var stagingIsEmpty: Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.appendingPathComponent("staging").path)) ?? []).isEmpty
    }

    /// Paths of the snapshots in staging.
    var stagedFiles: [String] {
        let staging = cacheDirectory.appendingPathComponent("staging")
        return ((try? FileManager.default.contentsOfDirectory(atPath: staging.path)) ?? []).map { staging.appendingPathComponent($0).path }
    }

    /// Local copies in the content folder, but the emptied ones kept for new copies
    /// (`spare-N`, see `SpareCopyFiles`).
    var contentFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory.appendingPathComponent("content").path)) ?? [])
            .filter { !$0.hasPrefix("spare-") }
    }

    /// Reads a control attribute (`user.sitefs.control.*`) of `inode` as the mount's owner and
    /// decodes the daemon's answer.
    func control<Answer: Decodable>(_ inode: InodeNumber, _ name: String, as: Answer.Type = PinAnswer.self) throws -> Answer {
        try JSONDecoder().decode(Answer.self, from: Data(filesystem.getExtendedAttribute(inode, name: name, context: context)))
    }

    /// Waits (bounded) until the pins' background work is done and `files` pinned files are local.
    func pinnedFilesLocal(_ files: Int) -> Bool {
        eventually {
            let pins = filesystem.mountStatus.pins
            return pins?.settled == true && pins?.files == files && pins?.localFiles == files
        }
    }

    /// Puts the site "Harbour" holding `Plans/a.txt`, `Plans/b.txt` and `notes.txt` on the
    /// server, mounts, and answers the site's and Plans' inodes.
    func mountPlansSite() throws -> (site: InodeNumber, plans: InodeNumber) {
        let site = backend.addSite("Harbour")
        let plans = backend.add("Plans", in: site, kind: .folder)
        backend.add("a.txt", in: plans, kind: .file, content: Array("plan a".utf8))
        backend.add("b.txt", in: plans, kind: .file, content: Array("plan b".utf8))
        backend.add("notes.txt", in: site, kind: .file, content: Array("notes".utf8))
        mount()
        let siteInode = try lookup(.root, "Harbour").attributes.inode
        return (siteInode, try lookup(siteInode, "Plans").attributes.inode)
    }
}
