import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import SitefsTestSupport
import Testing

@Suite("Lookup counts and forget", .requiresFUSE)
struct LookupCountTests {
    static var canDropCaches: Bool { FileManager.default.isWritableFile(atPath: "/proc/sys/vm/drop_caches") }

    /// Asks the kernel to evict unused dentries and inodes; each evicted FUSE inode is
    /// forgotten (FORGET / BATCH_FORGET) with exactly the lookups it had accumulated.
    static func dropCaches() {
        guard let handle = FileHandle(forWritingAtPath: "/proc/sys/vm/drop_caches") else { return }
        try? handle.write(contentsOf: Data("2\n".utf8))
        try? handle.close()
    }

    @Test("lookups from readdirplus, lookup, create and mkdir all come back through forget after drop_caches",
          .enabled(if: LookupCountTests.canDropCaches, "/proc/sys/vm/drop_caches is not writable (needs root outside a container)"))
    func forgetAfterDropCaches() throws {
        let filesystem = InMemoryFilesystem()
        for index in 0..<500 {
            filesystem.addFile("many/entry-\(index)", contents: Array("\(index)".utf8))
        }
        filesystem.addFile("looked/up.txt", contents: Array("x".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }

        // Twice: entries placed again while the kernel still holds them are counted again
        // (the kernel adds to its nlookup), and must all be forgotten in the end.
        for _ in 0..<2 {
            #expect(try mount.runProgram("/bin/ls", ["-l", mount.path("many")]).status == 0)
        }
        let lookedUp = mount.path("looked/up.txt"), created = mount.path("created.txt"), made = mount.path("made")
        try mount.perform("lookup, create, mkdir") {
            var status = stat()
            try Syscall.check(stat(lookedUp, &status), "stat")
            let descriptor = open(created, O_WRONLY | O_CREAT, 0o644)
            try Syscall.check(descriptor, "create")
            close(descriptor)
            try Syscall.check(mkdir(made, 0o755), "mkdir")
        }
        let outstanding = filesystem.outstandingLookups
        #expect(outstanding.count >= 500, "readdirplus entries were not counted")
        #expect(outstanding[filesystem.inode("created.txt") ?? 0] == 1)
        #expect(outstanding[filesystem.inode("made") ?? 0] == 1)
        #expect(outstanding[.root] == nil, "the root is never looked up or forgotten")

        // The kernel forgets what it no longer caches: dropped here, until it has forgotten all.
        _ = eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            Self.dropCaches()
            return filesystem.outstandingLookups.isEmpty
        }
        #expect(filesystem.outstandingLookups == [:], "inodes the kernel never forgot")
        #expect(filesystem.counters.forgetUnderflows == 0, "the kernel forgot more than was counted")
        #expect(filesystem.counters.forgets > 0)
    }
}
