import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import Testing

@Suite("Directories", .requiresFUSE)
struct DirectoryTests {
    static let entryCount = 3000

    static func bigDirectory() -> InMemoryFilesystem {
        let filesystem = InMemoryFilesystem()
        for index in 0..<entryCount {
            filesystem.addFile("big/file-\(index).txt", contents: Array("\(index)\n".utf8))
        }
        return filesystem
    }

    @Test("readdir(plus) of a 3000-entry directory returns every entry exactly once", arguments: [true, false])
    func everyEntryOnce(plus: Bool) throws {
        let filesystem = Self.bigDirectory()
        let mount = try TestMount.start(filesystem, options: MountOptions(fsName: "sitefs-test", readDirectoryPlus: plus))
        defer { mount.tearDown() }
        let path = mount.path("big")
        let names = try mount.perform("readdir of big") { try Syscall.readDirectoryNames(path) }

        let expected = Set((0..<Self.entryCount).map { "file-\($0).txt" }).union([".", ".."])
        #expect(names.count == expected.count, "duplicates or gaps across reply buffers")
        #expect(Set(names) == expected)
        // 3000 entries take several reply buffers (the kernel asks for a few pages at a
        // time), so the listing was resumed from returned offsets more than once.
        let counters = filesystem.counters
        if plus {
            #expect(counters.plusDirectoryReads >= 3)
            #expect(counters.plainDirectoryReads == 0)
        } else {
            #expect(counters.plainDirectoryReads >= 3)
            #expect(counters.plusDirectoryReads == 0)
        }
    }

    @Test("ls -l lists all 3000 entries with attributes from readdirplus")
    func longListing() throws {
        let filesystem = Self.bigDirectory()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let result = try mount.runProgram("/bin/ls", ["-l", mount.path("big")])
        #expect(result.status == 0, "\(result.err)")
        let lines = result.out.split(separator: "\n").filter { $0.hasPrefix("-rw-r--r--") }
        #expect(lines.count == Self.entryCount)
        #expect(result.out.contains(" file-2999.txt"))
        #expect(filesystem.counters.plusDirectoryReads > 0)
        #expect(filesystem.counters.plainDirectoryReads == 0)
    }

    @Test("mkdir creates, rmdir of a non-empty directory fails with ENOTEMPTY, rmdir of an empty one works")
    func makeAndRemoveDirectories() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let parent = mount.path("parent"), child = mount.path("parent/child")
        let results = try mount.perform("mkdir/rmdir") { () -> [Int32] in
            func code(_ result: Int32) -> Int32 { result < 0 ? errno : 0 }
            return [
                code(mkdir(parent, 0o755)),
                code(mkdir(child, 0o700)),
                code(mkdir(parent, 0o755)),
                code(rmdir(parent)),
                code(rmdir(child)),
                code(rmdir(parent)),
                code(rmdir(parent)),
            ]
        }
        #expect(results == [0, 0, EEXIST, ENOTEMPTY, 0, 0, ENOENT])
        #expect(filesystem.inode("parent") == nil)

        let made = try mount.runProgram("/bin/mkdir", ["-p", mount.path("a/b/c")])
        #expect(made.status == 0)
        let failing = try mount.runProgram("/bin/rmdir", [mount.path("a")])
        #expect(failing.status != 0)
        #expect(failing.err.contains("Directory not empty"))
    }

    @Test("mkdir passes permission bits after the umask; the new directory has them")
    func directoryMode() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("modes")
        let mode = try mount.perform("mkdir + stat") { () throws -> UInt32 in
            try Syscall.check(mkdir(path, 0o777), "mkdir")
            var status = stat()
            try Syscall.check(stat(path, &status), "stat")
            return status.st_mode
        }
        #expect(mode & S_IFMT == S_IFDIR)
        #expect(mode & 0o7777 == 0o777 & ~Syscall.processUmask())
    }

    @Test("unlink removes a file; unlinking a missing name is ENOENT, a directory EISDIR")
    func unlinkFiles() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("doomed.txt", contents: Array("bye".utf8))
        filesystem.makeDirectories("folder")
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let doomed = mount.path("doomed.txt"), folder = mount.path("folder")
        let results = try mount.perform("unlink") { () -> [Int32] in
            func code(_ result: Int32) -> Int32 { result < 0 ? errno : 0 }
            var status = stat()
            return [code(unlink(doomed)), code(stat(doomed, &status)), code(unlink(doomed)), code(unlink(folder))]
        }
        #expect(results == [0, ENOENT, ENOENT, EISDIR])
        #expect(filesystem.inode("doomed.txt") == nil)
    }

    @Test("rename moves a file between directories and replaces a target")
    func renameFiles() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("from/a.txt", contents: Array("A".utf8))
        filesystem.addFile("to/b.txt", contents: Array("B".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let a = mount.path("from/a.txt"), moved = mount.path("to/moved.txt"), b = mount.path("to/b.txt")
        try mount.perform("rename") {
            try Syscall.check(rename(a, moved), "rename a -> moved")
            try Syscall.check(rename(moved, b), "rename moved -> b (replacing)")
        }
        #expect(filesystem.inode("from/a.txt") == nil)
        #expect(filesystem.inode("to/moved.txt") == nil)
        #expect(filesystem.contents("to/b.txt") == Array("A".utf8))
        let cat = try mount.runProgram("/bin/cat", [b])
        #expect(cat.out == "A")
    }

    @Test("renameat2 flags reach the core: RENAME_EXCHANGE swaps two files")
    func renameExchange() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("one.txt", contents: Array("1".utf8))
        filesystem.addFile("two.txt", contents: Array("2".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let one = mount.path("one.txt"), two = mount.path("two.txt")
        try mount.perform("renameat2 exchange") {
            try Syscall.check(Syscall.renameat2(one, two, flags: 2), "renameat2(RENAME_EXCHANGE)")
        }
        #expect(filesystem.contents("one.txt") == Array("2".utf8))
        #expect(filesystem.contents("two.txt") == Array("1".utf8))
        let noReplace = try mount.perform("renameat2 noreplace") { () -> Int32 in
            Syscall.renameat2(one, two, flags: 1) < 0 ? errno : 0
        }
        #expect(noReplace == EEXIST)
    }
}
