import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import Testing

@Suite("Files", .requiresFUSE)
struct FileTests {
    @Test("a file created and written through the mount reads back, in the core and through cat")
    func createWriteRead() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let url = URL(fileURLWithPath: mount.path("written.bin"))
        let readBack = try mount.perform("write then read written.bin") { () throws -> Data in
            try payload.write(to: url)
            return try Data(contentsOf: url)
        }
        #expect(readBack == payload)
        #expect(filesystem.contents("written.bin") == Array(payload))

        let text = mount.path("note.txt")
        try mount.perform("write note.txt") { try "hello, sitefs\n".write(toFile: text, atomically: false, encoding: .utf8) }
        let cat = try mount.runProgram("/bin/cat", [text])
        #expect(cat.status == 0)
        #expect(cat.out == "hello, sitefs\n")
        let stat = try mount.runProgram("/usr/bin/stat", ["-c", "%s %F %a", text])
        #expect(stat.out == "14 regular file 644\n")
    }

    @Test("a file's st_blksize advertises 1 MiB, so cp and cat write in 1 MiB requests (a round trip each)")
    func toolsWriteInLargeRequests() throws {
        let filesystem = InMemoryFilesystem()
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-blksize-\(getpid()).bin")
        let payload = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try payload.write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let copy = try mount.runProgram("/bin/sh", ["-c", "cat \"$0\" > \"$1\"", source.path, mount.path("copied.bin")])
        #expect(copy.status == 0)
        // Files say 1 MiB; directories keep 4 KiB (glibc sizes readdir buffers by it).
        let stat = try mount.runProgram("/usr/bin/stat", ["-c", "%o", mount.path("copied.bin"), mount.path(".")])
        #expect(stat.out == "1048576\n4096\n")
        #expect(filesystem.contents("copied.bin") == Array(payload))
        // 128 KiB (cat's own minimum) would mean st_blksize went unheard or max_write is small.
        #expect(filesystem.counters.largestWrite == 1 << 20)
    }

    @Test("writes through a write-only handle bypass the page cache (Linux 6.6+); a read-write handle's stay in it")
    func writeOnlyHandlesBypassThePageCache() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("read-write.bin", contents: [])
        filesystem.addFile("write-only.bin", contents: [])
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let size = 1 << 20, pageSize = Int(getpagesize())
        /// Writes `size` bytes through a handle opened with `flags`, then counts the file's
        /// pages in the kernel's page cache through a reader's mapping (opened first, so no
        /// open in between drops the cache).
        func cachedPages(writingWith flags: Int32, _ name: String) throws -> Int {
            let path = mount.path(name)
            return try mount.perform("write \(name), count its cached pages") { () throws -> Int in
                let reader = open(path, O_RDONLY)
                try Syscall.check(reader, "open reader")
                defer { close(reader) }
                let writer = open(path, flags)
                try Syscall.check(writer, "open writer")
                let bytes = [UInt8](repeating: 0x5A, count: size)
                let written = bytes.withUnsafeBytes { write(writer, $0.baseAddress, size) }
                close(writer)
                try Syscall.check(written == size ? 0 : -1, "write of \(size) bytes returned \(written)")
                guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, reader, 0), map != MAP_FAILED else {
                    throw Syscall.Failure(errno: errno, call: "mmap")
                }
                defer { munmap(map, size) }
                var residency = [UInt8](repeating: 0, count: size / pageSize)
                try Syscall.check(mincore(map, size, &residency), "mincore")
                return residency.count { $0 & 1 != 0 }
            }
        }
        // Shows the count can tell: write-through leaves every written page cached.
        #expect(try cachedPages(writingWith: O_RDWR, "read-write.bin") == size / pageSize)
        let bypassed = !Self.kernelRelease().lexicographicallyPrecedes([6, 6])
        #expect(try cachedPages(writingWith: O_WRONLY, "write-only.bin") == (bypassed ? 0 : size / pageSize))
        #expect(filesystem.contents("write-only.bin") == [UInt8](repeating: 0x5A, count: size))
    }

    @Test("a reader's cached pages show what a write-only handle wrote, in place and appended into the last page")
    func cachedPagesSeeWritesOfAWriteOnlyHandle() throws {
        let filesystem = InMemoryFilesystem()
        let original = (0..<64_536).map { UInt8(truncatingIfNeeded: $0 &* 13) }  // the last page is partial
        filesystem.addFile("shared.bin", contents: original)
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("shared.bin")
        var expected = original
        expected.replaceSubrange(10_000..<14_096, with: [UInt8](repeating: 0xEE, count: 4096))
        expected += [UInt8](repeating: 0xAA, count: 3000)
        let (first, second) = try mount.perform("read, write through other handles, read again") { () throws -> ([UInt8], [UInt8]) in
            let reader = open(path, O_RDONLY)
            try Syscall.check(reader, "open reader")
            defer { close(reader) }
            func readAll() throws -> [UInt8] {
                var buffer = [UInt8](repeating: 0, count: 80_000)
                let count = buffer.withUnsafeMutableBytes { pread(reader, $0.baseAddress, $0.count, 0) }
                try Syscall.check(count < 0 ? -1 : 0, "pread")
                return Array(buffer.prefix(count))
            }
            let first = try readAll()  // now cached
            let writer = open(path, O_WRONLY)
            try Syscall.check(writer, "open writer")
            let patch = [UInt8](repeating: 0xEE, count: 4096)
            let patched = patch.withUnsafeBytes { pwrite(writer, $0.baseAddress, $0.count, 10_000) }
            close(writer)
            let appender = open(path, O_WRONLY | O_APPEND)
            try Syscall.check(appender, "open appender")
            let tail = [UInt8](repeating: 0xAA, count: 3000)
            let appended = tail.withUnsafeBytes { write(appender, $0.baseAddress, $0.count) }
            close(appender)
            try Syscall.check(patched == 4096 && appended == 3000 ? 0 : -1, "pwrite \(patched), append \(appended)")
            return (first, try readAll())
        }
        #expect(first == original)
        #expect(second == expected)
        #expect(filesystem.contents("shared.bin") == expected)
    }

    @Test("truncate(2) and ftruncate(2) arrive as setattr with a size")
    func truncateThroughSetattr() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("long.txt", contents: Array("0123456789abcdef".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("long.txt")
        let sizes = try mount.perform("truncate") { () throws -> [Int] in
            var status = stat()
            try Syscall.check(truncate(path, 10), "truncate")
            try Syscall.check(stat(path, &status), "stat")
            let afterTruncate = status.st_size
            let descriptor = open(path, O_RDWR)
            try Syscall.check(descriptor, "open")
            defer { close(descriptor) }
            try Syscall.check(ftruncate(descriptor, 4), "ftruncate")
            try Syscall.check(fstat(descriptor, &status), "fstat")
            let afterFtruncate = status.st_size
            try Syscall.check(ftruncate(descriptor, 6), "ftruncate (extend)")
            try Syscall.check(fsync(descriptor), "fsync")
            return [afterTruncate, afterFtruncate]
        }
        #expect(sizes == [10, 4])
        #expect(filesystem.contents("long.txt") == Array("0123".utf8) + [0, 0])
    }

    @Test("open(O_TRUNC) truncates in the core's open (atomic O_TRUNC)")
    func openTruncates() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("replace.txt", contents: Array("old contents that are long".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("replace.txt")
        try mount.perform("open O_TRUNC and write") {
            let descriptor = open(path, O_WRONLY | O_TRUNC)
            try Syscall.check(descriptor, "open")
            defer { close(descriptor) }
            let written = "new".withCString { write(descriptor, $0, 3) }
            try Syscall.check(Int32(written), "write")
        }
        #expect(filesystem.contents("replace.txt") == Array("new".utf8))
        #expect(filesystem.counters.truncatingOpens == 1)
        #expect(try mount.runProgram("/bin/cat", [path]).out == "new")
    }

    @Test("chmod and utimensat (explicit times and UTIME_NOW) arrive as setattr")
    func modeAndTimes() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("times.txt", contents: [])
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("times.txt")
        let (mode, modification, access) = try mount.perform("chmod + utimensat") { () throws -> (UInt32, Int, Int) in
            try Syscall.check(chmod(path, 0o600), "chmod")
            var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 5), timespec(tv_sec: 1_234_567_890, tv_nsec: 42)]
            try Syscall.check(utimensat(AT_FDCWD, path, &times, 0), "utimensat")
            var status = stat()
            try Syscall.check(stat(path, &status), "stat")
            return (status.st_mode, status.st_mtim.tv_sec, status.st_atim.tv_sec)
        }
        #expect(mode & 0o7777 == 0o600)
        #expect(modification == 1_234_567_890)
        #expect(access == 1_000_000_000)

        let before = time(nil)
        let touched = try mount.perform("utimensat UTIME_NOW") { () throws -> Int in
            // UTIME_NOW is ((1l << 30) - 1l); Swift does not import that macro.
            var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1)]
            try Syscall.check(utimensat(AT_FDCWD, path, &times, 0), "utimensat now")
            var status = stat()
            try Syscall.check(stat(path, &status), "stat")
            return status.st_mtim.tv_sec
        }
        #expect(touched >= before - 1)
    }

    @Test("statvfs reports the core's statistics")
    func statistics() throws {
        let mount = try TestMount.start()
        defer { mount.tearDown() }
        let path = mount.path("")
        let result = try mount.perform("statvfs") { () throws -> statvfs in
            var buffer = statvfs()
            try Syscall.check(statvfs(path, &buffer), "statvfs")
            return buffer
        }
        let expected = InMemoryFilesystem.statistics
        #expect(UInt64(result.f_bsize) == expected.blockSize)
        #expect(UInt64(result.f_blocks) == expected.blocks)
        #expect(UInt64(result.f_bfree) == expected.freeBlocks)
        #expect(UInt64(result.f_bavail) == expected.availableBlocks)
        #expect(UInt64(result.f_files) == expected.files)
        #expect(UInt64(result.f_ffree) == expected.freeFiles)
        #expect(UInt64(result.f_namemax) == expected.maximumNameLength)
        let df = try mount.runProgram("/bin/df", ["-B4096", path])
        #expect(df.out.contains("sitefs-test"))
        #expect(df.out.contains("1000000"))
    }

    @Test("symlinks, hard links and device nodes are refused with EPERM")
    func unsupportedNodeTypes() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("target.txt", contents: Array("t".utf8))
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let target = mount.path("target.txt")
        let results = try mount.perform("symlink/link/mkfifo") { () -> [Int32] in
            func code(_ result: Int32) -> Int32 { result < 0 ? errno : 0 }
            return [
                code(symlink("target.txt", mount.path("symbolic"))),
                code(link(target, mount.path("hard"))),
                code(mkfifo(mount.path("fifo"), 0o644)),
            ]
        }
        #expect(results == [EPERM, EPERM, EPERM])
        let ln = try mount.runProgram("/bin/ln", ["-s", "target.txt", mount.path("symbolic")])
        #expect(ln.err.contains("Operation not permitted"))
    }

    /// The running kernel's version, e.g. [6, 18, 44] (empty if uname fails).
    static func kernelRelease() -> [Int] {
        var names = utsname()
        guard uname(&names) == 0 else { return [] }
        let release = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return release.split(whereSeparator: { !$0.isNumber }).prefix(3).compactMap { Int($0) }
    }
}
