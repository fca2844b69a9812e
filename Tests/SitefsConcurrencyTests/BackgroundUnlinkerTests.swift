import Foundation
import Testing

#if canImport(Glibc)
import Glibc
import SitefsConcurrency
#endif

/// Large local copies and snapshots are deleted off the caller's path; what must be gone when
/// the call returns is.
@Suite struct BackgroundUnlinkerTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-unlink-\(UUID().uuidString)")

    init() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private func makeFile(_ name: String, bytes: Int) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try Data(repeating: 0x5A, count: bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private var names: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted() }

    @Test func aLargeCopyFreesItsNameAtOnceAndGoesInTheBackground() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let unlinker = BackgroundUnlinker()
        let path = try makeFile("copy", bytes: 16 << 20)
        unlinker.delete(path, nameIsReused: true)
        // The next open of the item makes its copy at the same path, at once.
        #expect(access(path, F_OK) != 0, "the name is still taken")
        try Data("new copy".utf8).write(to: URL(fileURLWithPath: path))
        unlinker.drain()
        #expect(names == ["copy"])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new copy")
    }

    @Test func aNameWhoseFileHasAnotherLinkGoesBeforeTheCallReturns() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let unlinker = BackgroundUnlinker()
        let copy = try makeFile("copy", bytes: 16 << 20)
        let snapshot = directory.appendingPathComponent("snapshot").path
        #expect(link(copy, snapshot) == 0)
        unlinker.delete(snapshot)
        // LocalCopy.unshare reads the link count to know whether the copy is still shared.
        var info = stat()
        #expect(stat(copy, &info) == 0 && info.st_nlink == 1)
        #expect(names == ["copy"])
    }

    @Test func aSmallFileGoesBeforeTheCallReturns() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let unlinker = BackgroundUnlinker()
        let path = try makeFile("small", bytes: 64 << 10)
        unlinker.delete(path, nameIsReused: true)
        #expect(names.isEmpty)
    }

    @Test func aLargeSnapshotIsGoneOnceDrained() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let unlinker = BackgroundUnlinker()
        let path = try makeFile("snapshot", bytes: 16 << 20)
        unlinker.delete(path)
        unlinker.drain()
        #expect(names.isEmpty)
    }
}
