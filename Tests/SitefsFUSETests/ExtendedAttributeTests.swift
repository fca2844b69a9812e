import Foundation
import Glibc
import SitefsCore
import SitefsFUSE
import Testing

@Suite("Extended attributes", .requiresFUSE)
struct ExtendedAttributeTests {
    @Test("set, size probe, get, ERANGE, list, remove, ENODATA")
    func roundTrip() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("tagged.txt", contents: [])
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("tagged.txt")
        let value = Array("sitefs value".utf8)
        try mount.perform("setxattr") {
            try Syscall.setExtendedAttribute(path, "user.colour", value)
            try Syscall.setExtendedAttribute(path, "user.shape", Array("round".utf8))
        }

        let probe = try mount.perform("getxattr size probe") { Syscall.getExtendedAttribute(path, "user.colour", size: 0) }
        #expect(probe.0 == value.count)
        let full = try mount.perform("getxattr") { Syscall.getExtendedAttribute(path, "user.colour", size: 64) }
        #expect(full.1 == value)
        let tooSmall = try mount.perform("getxattr too small") { Syscall.getExtendedAttribute(path, "user.colour", size: 3) }
        #expect(tooSmall.0 == -1 && tooSmall.2 == ERANGE)
        let missing = try mount.perform("getxattr missing") { Syscall.getExtendedAttribute(path, "user.none", size: 64) }
        #expect(missing.0 == -1 && missing.2 == ENODATA)

        let expectedList = Array("user.colour\0user.shape\0".utf8)
        let listProbe = try mount.perform("listxattr size probe") { Syscall.listExtendedAttributes(path, size: 0) }
        #expect(listProbe.0 == expectedList.count)
        let list = try mount.perform("listxattr") { Syscall.listExtendedAttributes(path, size: 256) }
        #expect(list.1 == expectedList)
        let listTooSmall = try mount.perform("listxattr too small") { Syscall.listExtendedAttributes(path, size: 5) }
        #expect(listTooSmall.0 == -1 && listTooSmall.2 == ERANGE)

        let createExisting = try mount.perform("setxattr XATTR_CREATE on existing") { () -> Int32 in
            do throws(Syscall.Failure) { try Syscall.setExtendedAttribute(path, "user.colour", [1], flags: 1); return 0 } catch { return error.errno }
        }
        #expect(createExisting == EEXIST)

        try mount.perform("removexattr") { try Syscall.removeExtendedAttribute(path, "user.colour") }
        let afterRemove = try mount.perform("listxattr after remove") { Syscall.listExtendedAttributes(path, size: 256) }
        #expect(afterRemove.1 == Array("user.shape\0".utf8))
        let removeMissing = try mount.perform("removexattr missing") { () -> Int32 in
            do throws(Syscall.Failure) { try Syscall.removeExtendedAttribute(path, "user.colour"); return 0 } catch { return error.errno }
        }
        #expect(removeMissing == ENODATA)
    }

    @Test("getfattr/setfattr work against the mount", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/getfattr"), "attr (getfattr/setfattr) is not installed"))
    func attrTools() throws {
        let filesystem = InMemoryFilesystem()
        filesystem.addFile("tools.txt", contents: [])
        let mount = try TestMount.start(filesystem)
        defer { mount.tearDown() }
        let path = mount.path("tools.txt")
        let set = try mount.runProgram("/usr/bin/setfattr", ["-n", "user.tool", "-v", "hammer", path])
        #expect(set.status == 0, "\(set.err)")
        let get = try mount.runProgram("/usr/bin/getfattr", ["-d", path])
        #expect(get.out.contains("user.tool=\"hammer\""))
    }
}
