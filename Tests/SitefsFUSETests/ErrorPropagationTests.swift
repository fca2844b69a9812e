import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import SystemPackage
import Testing

@Suite("Errors from the core reach callers as errno", .requiresFUSE)
struct ErrorPropagationTests {
    @Test("open throwing EACCES: cat says Permission denied", arguments: [
        (Errno.permissionDenied, "Permission denied"),
        (Errno.ioError, "Input/output error"),
    ])
    func openErrors(error: Errno, message: String) throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("guarded.txt", contents: Array("secret".utf8))
        filesystem.failOpen("guarded.txt", with: error)
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("guarded.txt")
        let cat = try mount.runProgram("/bin/cat", [path])
        #expect(cat.status != 0)
        #expect(cat.err.contains(message), "\(cat.err)")
        let code = try mount.perform("open") { () -> Int32 in
            let descriptor = open(path, O_RDONLY)
            if descriptor >= 0 { close(descriptor); return 0 }
            return errno
        }
        #expect(code == error.rawValue)
    }

    @Test("a listing that fails part-way: the entries before the failure arrive, then EIO", arguments: [true, false])
    func listingFailsPartWay(plus: Bool) throws {
        let filesystem = InMemoryFilesystem()
        for index in 0..<1000 {
            filesystem.addFile("flaky/entry-\(index)", contents: [])
        }
        filesystem.failListing("flaky", atOffset: 700)
        let mount = try TestMount.start(filesystem, options: MountOptions(fsName: "sitefs-test", readDirectoryPlus: plus))
        defer { mount.tearDown() }
        let path = mount.path("flaky")
        let ls = try mount.runProgram("/bin/ls", ["-f", path])
        #expect(ls.status != 0)
        #expect(ls.err.contains("Input/output error"), "\(ls.err)")
        let listed = ls.out.split(separator: "\n")
        #expect(listed.count == 700, "every entry before offset 700, each once")
        #expect(Set(listed).count == listed.count)
        #expect(filesystem.counters.forgetUnderflows == 0)
    }

    @Test("lookup of a missing name is ENOENT")
    func missingName() throws {
        let mount = try TestMount.start()
        defer { mount.tearDown() }
        let path = mount.path("nothing-here")
        let code = try mount.perform("stat") { () -> Int32 in
            var status = stat()
            return stat(path, &status) < 0 ? errno : 0
        }
        #expect(code == ENOENT)
        let ls = try mount.runProgram("/bin/ls", [path])
        #expect(ls.err.contains("No such file or directory"))
    }
}
