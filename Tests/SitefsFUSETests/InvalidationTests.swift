import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import SystemPackage
import Testing

@Suite("Kernel cache invalidation", .requiresFUSE)
struct InvalidationTests {
    /// Long timeouts, so only an invalidation (not expiry) can make the kernel ask again.
    static let longTimeout = 600.0

    @Test("invalidateEntry drops a cached name the core no longer has")
    func entry() throws {
        let filesystem = InMemoryFilesystem(timeout: Self.longTimeout)
        filesystem.addFile("moving.txt", contents: Array("m".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("moving.txt")
        let statCode: @Sendable () -> Int32 = {
            var status = stat()
            return stat(path, &status) < 0 ? errno : 0
        }
        #expect(try mount.perform("stat", statCode) == 0)

        // The server side removes the file behind the kernel's back.
        let removed = try mount.perform("unlink on the core side") { () -> Bool in
            do throws(Errno) {
                try filesystem.unlink(parent: .root, name: FileName("moving.txt"), context: RequestContext(uid: 0, gid: 0, pid: 0))
                return true
            } catch { return false }
        }
        #expect(removed)
        #expect(try mount.perform("stat (cached)", statCode) == 0, "the kernel still has the cached entry")

        let invalidator = try #require(filesystem.invalidator())
        try mount.perform("invalidateEntry") { invalidator.invalidateEntry(parent: .root, name: FileName("moving.txt")) }
        #expect(try mount.perform("stat after invalidation", statCode) == ENOENT)
    }

    @Test("invalidateInode drops cached attributes and pages")
    func inode() throws {
        let filesystem = InMemoryFilesystem(timeout: Self.longTimeout)
        let inode = filesystem.addFile("growing.txt", contents: Array("short".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("growing.txt")
        let size: @Sendable () throws -> Int = {
            var status = stat()
            try Syscall.check(stat(path, &status), "stat")
            return status.st_size
        }
        #expect(try mount.perform("stat", size) == 5)

        // The content changes on the server side; the kernel's attributes are still valid.
        _ = try mount.perform("change on the core side") { () -> Bool in
            let handle = try? filesystem.open(inode, flags: O_WRONLY, context: RequestContext(uid: 0, gid: 0, pid: 0)).handle
            guard let handle else { return false }
            let written = Array("much longer now".utf8).withUnsafeBytes { try? filesystem.write(inode, handle: handle, offset: 0, data: $0, flags: 0) }
            filesystem.release(inode, handle: handle, flags: 0)
            return written != nil
        }
        #expect(try mount.perform("stat (cached)", size) == 5)

        let invalidator = try #require(filesystem.invalidator())
        try mount.perform("invalidateInode") { invalidator.invalidateInode(inode, offset: 0, length: 0) }
        #expect(try mount.perform("stat after invalidation", size) == 15)
        #expect(try mount.runProgram("/bin/cat", [path]).out == "much longer now")
    }

    @Test("invalidations after unmount are ignored")
    func afterUnmount() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        let invalidator = try #require(filesystem.invalidator())
        mount.tearDown()
        invalidator.invalidateEntry(parent: .root, name: FileName("anything"))
        invalidator.invalidateInode(.root, offset: -1, length: 0)
    }
}
