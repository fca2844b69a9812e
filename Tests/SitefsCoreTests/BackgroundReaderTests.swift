import Foundation
import SitefsCore
import SitefsTestSupport
import SystemPackage
import Synchronization
import Testing

/// Thumbnailers and indexers get what is on this device and nothing that would have to be
/// downloaded (`BackgroundReaders`); everyone else is served as before.
@Suite struct BackgroundReaderTests {
    /// Processes by pid, as `/proc` would describe them.
    private static let processes: [Int32: ProcessMatcher.ProcessDescription] = [
        10: .init(arguments: ["/usr/bin/gdk-pixbuf-thumbnailer", "-s", "256", "file:///x.png", "/tmp/out.png"], startTime: 5),
        11: .init(arguments: ["/usr/bin/cat", "/x.png"], startTime: 5),
        12: .init(arguments: ["/usr/lib/x86_64-linux-gnu/libexec/kf6/kioworker", "/usr/lib/x86_64-linux-gnu/qt6/plugins/kf6/kio/thumbnail.so",
                              "thumbnail", "local:/run/user/1000/dolphin.sock"], startTime: 5),
        13: .init(arguments: ["kioworker", "/usr/lib/x86_64-linux-gnu/qt6/plugins/kf6/kio/file.so", "file", "local:/run/x"], startTime: 5),
        14: .init(arguments: ["/usr/libexec/tracker-extract-3"], startTime: 5),
        15: .init(arguments: ["/opt/viewers/my-site-thumbnailer", "%u"], startTime: 5),
    ]

    private static func readers(_ programs: Set<String> = BackgroundReaders.knownPrograms) -> ProcessMatcher {
        ProcessMatcher(programs: programs, kioThumbnailWorkers: true, describe: { processes[$0] })
    }

    @Test func thumbnailersIndexersAndKDEPreviewsAreRecognisedByProgram() {
        let readers = Self.readers()
        #expect(readers.matchingProgram(pid: 10) == "gdk-pixbuf-thumbnailer")
        #expect(readers.matchingProgram(pid: 11) == nil, "cat reads for a person")
        #expect(readers.matchingProgram(pid: 12) == "kioworker", "KDE's thumbnail worker")
        #expect(readers.matchingProgram(pid: 13) == nil, "a kioworker copying a file for Dolphin")
        #expect(readers.matchingProgram(pid: 14) == "tracker-extract-3")
        #expect(readers.matchingProgram(pid: 15) == nil, "not registered")
        #expect(readers.matchingProgram(pid: 99) == nil, "gone")
        #expect(readers.matchingProgram(pid: 0) == nil, "the kernel's own")
    }

    @Test func aPidReusedByAnotherProgramIsJudgedAgain() {
        let table = Mutex<[Int32: ProcessMatcher.ProcessDescription]>([20: .init(arguments: ["tracker-extract-3"], startTime: 1)])
        let readers = ProcessMatcher(programs: BackgroundReaders.knownPrograms, kioThumbnailWorkers: true, describe: { pid in table.withLock { $0[pid] } })
        #expect(readers.matchingProgram(pid: 20) == "tracker-extract-3")
        table.withLock { $0[20] = .init(arguments: ["/usr/bin/vim"], startTime: 2) }
        #expect(readers.matchingProgram(pid: 20) == nil)
    }

    @Test func registeredThumbnailersAreReadFromTheirFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnailers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try """
            [Thumbnailer Entry]
            TryExec=/opt/viewers/my-site-thumbnailer
            Exec=/opt/viewers/my-site-thumbnailer -s %s %u %o
            MimeType=application/x-site-plan;
            """.write(to: folder.appendingPathComponent("site.thumbnailer"), atomically: true, encoding: .utf8)
        try "Exec=not-a-registration".write(to: folder.appendingPathComponent("notes.txt"), atomically: true, encoding: .utf8)
        let programs = BackgroundReaders.registeredThumbnailers(in: [folder.path, "/nonexistent/thumbnailers"])
        #expect(programs == ["my-site-thumbnailer"])
        #expect(Self.readers(programs).matchingProgram(pid: 15) == "my-site-thumbnailer")
        #expect(BackgroundReaders.thumbnailerFolders(environment: ["HOME": "/home/anna", "XDG_DATA_DIRS": "/usr/share"])
                == ["/home/anna/.local/share/thumbnailers", "/usr/share/thumbnailers"])
    }

    @Test func thisProcessIsDescribedFromProc() throws {
        let me = try #require(ProcessMatcher.procDescription(pid: getpid()))
        #expect(me.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } == URL(fileURLWithPath: CommandLine.arguments[0]).lastPathComponent)
        #expect(me.startTime > 0)
        #expect(ProcessMatcher.procDescription(pid: getpid()) == me, "stable")
    }

    /// The core: an online-only file is refused to a thumbnailer without a request to the
    /// server; a person's read of it works; once the file is on this device (pinned), the
    /// thumbnailer reads it too (revalidated as any open of a kept copy is).
    @Test func aThumbnailerGetsOnlyWhatIsOnThisDevice() throws {
        let harness = try CoreHarness(writeBackDelay: .zero, backgroundReaders: Self.readers())
        defer { harness.remove(); harness.filesystem.unmounting() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("plan.png", in: site, kind: .file, content: Array("not really a png".utf8))
        harness.mount()
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode
        let plan = try harness.lookup(siteInode, "plan.png").attributes.inode
        let thumbnailer = RequestContext(uid: 1000, gid: 1000, pid: 10)
        let person = RequestContext(uid: 1000, gid: 1000, pid: 11)

        #expect(throws: Errno.wouldBlock) { try harness.filesystem.open(plan, flags: O_RDONLY, context: thumbnailer) }
        #expect(harness.backend.calls("fetch") == 0, "nothing downloaded for the thumbnailer")
        let handle = try harness.filesystem.open(plan, flags: O_RDONLY, context: person).handle
        harness.filesystem.release(plan, handle: handle, flags: O_RDONLY)
        #expect(harness.backend.calls("fetch") == 0, "an open alone reads nothing")

        _ = try harness.filesystem.getExtendedAttribute(plan, name: "user.sitefs.control.pin", context: harness.context)
        #expect(eventually { (try? harness.xattr(plan, "user.sitefs.state")) == "downloaded" })
        let pinned = try harness.filesystem.open(plan, flags: O_RDONLY, context: thumbnailer).handle
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try harness.filesystem.read(plan, handle: pinned, offset: 0, size: 64, into: $0) }
        harness.filesystem.release(plan, handle: pinned, flags: O_RDONLY)
        #expect(String(decoding: buffer.prefix(count), as: UTF8.self) == "not really a png", "served from the pinned copy")
    }
}
