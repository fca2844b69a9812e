import Foundation
import SitefsCore
import SitefsTestSupport
import SystemPackage
import Testing

/// The server's pictures of online-only files are filed in the freedesktop thumbnail cache
/// when a file manager lists their folder, so it shows them without reading any content.
@Suite struct ThumbnailCoreTests {
    /// A 48×32 PNG.
    static let png = [UInt8](Data(base64Encoded: """
        iVBORw0KGgoAAAANSUhEUgAAADAAAAAgEAIAAACLJrAIAAAAj0lEQVRo3u3asQ2AMAwF0R8pRRiDVWBuGIU1QgcTwJVJcW8C62QsipTniX7U+0zaNnqMeRkIGAiUqydrGz3G\
        vNwgYCBgIFD7mSwG+uQGAQMBAwFvEHCDgIGAgUDtR7Lso8eYlxsEDAQMBPwPAm4QMBAwEPAGATcIGAiUtSVXHz3GvLxBwE8MGAiUJPEJzLcX1bdAbfcYS4cAAAAASUVORK5CYII=
        """)!)

    @Test func urisAreWhatGLibMakesOfThePath() throws {
        let path = "/home/anna/sites/Harbour Tower/Forms #2/café ü;[x]%?é!$&'()*+,-.:=@_~.odt"
        let glib = try run(URL(fileURLWithPath: "/usr/bin/python3"),
                           ["-c", "import sys; from gi.repository import GLib; print(GLib.filename_to_uri(sys.argv[1], None))", path])
        try #require(glib.status == 0, "\(glib.err)")
        #expect(ThumbnailCache.uri(ofPath: path) == glib.out.trimmingCharacters(in: .newlines))
    }

    @Test func aFiledThumbnailCarriesItsURIAndModificationTime() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnails-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ThumbnailCache(root: root.path)
        let uri = ThumbnailCache.uri(ofPath: "/mnt/sites/Harbour/plan.png")
        #expect(!cache.hasCurrent(uri, mtime: 1_700_000_000, size: .large))
        try cache.store(Self.png, uri: uri, mtime: 1_700_000_000, size: .large)
        #expect(cache.hasCurrent(uri, mtime: 1_700_000_000, size: .large))
        #expect(!cache.hasCurrent(uri, mtime: 1_700_000_001, size: .large), "another mtime: stale")
        #expect(!cache.hasCurrent(uri, mtime: 1_700_000_000, size: .normal))
        let file = cache.path(of: uri, size: .large)
        #expect(file.hasSuffix("/large/" + (try md5(uri)) + ".png"))
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // GdkPixbuf (what GNOME's thumbnail factory reads it with) sees a valid PNG with the keys.
        let seen = try run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", """
            import sys, gi
            gi.require_version('GdkPixbuf', '2.0')
            from gi.repository import GdkPixbuf
            p = GdkPixbuf.Pixbuf.new_from_file(sys.argv[1])
            print(p.get_width(), p.get_height(), p.get_option('tEXt::Thumb::URI'), p.get_option('tEXt::Thumb::MTime'))
            """, file])
        #expect(seen.out.trimmingCharacters(in: .newlines) == "48 32 \(uri) 1700000000", "\(seen.err)")
    }

    @Test func aFileManagersListingFilesTheServersPicturesOfOnlineOnlyFiles() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnails-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let cache = ThumbnailCache(root: root.path)
        let nautilus = RequestContext(uid: 1000, gid: 1000, pid: 20)
        let harness = try CoreHarness(writeBackDelay: .zero, thumbnails: ThumbnailSettings(
            cache: cache, mountpoint: "/mnt/sites",
            fileManagers: ProcessMatcher(programs: FileManagers.programs, describe: { pid in
                pid == 20 ? .init(arguments: ["/usr/bin/nautilus", "--gapplication-service"], startTime: 1) : nil
            })))
        defer { harness.remove(); harness.filesystem.unmounting() }
        let site = harness.backend.addSite("Harbour")
        let photo = harness.backend.add("photo.png", in: site, kind: .file, content: Array("content".utf8))
        harness.backend.add("notes.txt", in: site, kind: .file, content: Array("notes".utf8))
        harness.backend.add("scan.pdf", in: site, kind: .file, content: Array("no picture".utf8))
        harness.backend.setThumbnail(Self.png, for: photo)
        harness.mount()
        let siteInode = try harness.lookup(.root, "Harbour").attributes.inode

        _ = try harness.list(siteInode)  // `ls`: nothing asked
        #expect(harness.backend.calls("thumbnail") == 0)
        _ = try list(harness, siteInode, as: nautilus)
        #expect(harness.backend.calls("thumbnail") == 2, "photo.png and scan.pdf; not notes.txt")
        let uri = ThumbnailCache.uri(ofPath: "/mnt/sites/Harbour/photo.png")
        let item = try #require(harness.backend.node(named: "photo.png", in: site))
        #expect(cache.hasCurrent(uri, mtime: item.modified.microseconds / 1_000_000, size: .large))
        #expect(harness.backend.calls("fetch") == 0, "no content read")

        _ = try list(harness, siteInode, as: nautilus)
        #expect(harness.backend.calls("thumbnail") == 2, "filed once, and the picture-less version remembered")
    }

    @Test func aFilePinnedLocalLosesItsFailedThumbnailRecords() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("thumbnails-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let harness = try CoreHarness(writeBackDelay: .zero, thumbnails: ThumbnailSettings(cache: ThumbnailCache(root: root.path),
                                                                                           mountpoint: "/mnt/sites", fileManagers: .none))
        defer { harness.remove(); harness.filesystem.unmounting() }
        let site = harness.backend.addSite("Harbour")
        harness.backend.add("clip.mp4", in: site, kind: .file, content: Array("video".utf8))
        harness.mount()
        let uri = ThumbnailCache.uri(ofPath: "/mnt/sites/Harbour/clip.mp4")
        let record = root.appendingPathComponent("fail/gnome-thumbnail-factory/\(try md5(uri)).png")
        try FileManager.default.createDirectory(at: record.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(Self.png).write(to: record)
        let other = root.appendingPathComponent("fail/gnome-thumbnail-factory/\(try md5(uri + "x")).png")
        try Data(Self.png).write(to: other)

        let clip = try harness.lookup(try harness.lookup(.root, "Harbour").attributes.inode, "clip.mp4").attributes.inode
        _ = try harness.filesystem.getExtendedAttribute(clip, name: "user.sitefs.control.pin", context: harness.context)
        #expect(eventually { (try? harness.xattr(clip, "user.sitefs.state")) == "downloaded" })
        #expect(!FileManager.default.fileExists(atPath: record.path), "the thumbnailer may try again, on the local copy")
        #expect(FileManager.default.fileExists(atPath: other.path), "another file's record stays")
    }

    /// Lists a folder as `context`'s process would (opendir, readdir to the end, closedir).
    private func list(_ harness: CoreHarness, _ inode: InodeNumber, as context: RequestContext) throws -> [String] {
        let handle = try harness.filesystem.openDirectory(inode, flags: 0, context: context)
        defer { harness.filesystem.releaseDirectory(inode, handle: handle) }
        var names: [String] = []
        var offset: UInt64 = 0
        while true {
            var batch: [DirectoryEntry] = []
            try harness.filesystem.readDirectory(inode, handle: handle, offset: offset, plus: false, context: context) { entry in
                batch.append(entry)
                return batch.count < 100
            }
            guard let last = batch.last else { return names }
            names += batch.map { String(decoding: $0.name.bytes, as: UTF8.self) }
            offset = last.nextOffset
        }
    }

    private func md5(_ text: String) throws -> String {
        let result = try run(URL(fileURLWithPath: "/usr/bin/python3"), ["-c", "import sys, hashlib; print(hashlib.md5(sys.argv[1].encode()).hexdigest())", text])
        return result.out.trimmingCharacters(in: .newlines)
    }
}
