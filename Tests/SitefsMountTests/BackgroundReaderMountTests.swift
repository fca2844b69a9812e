import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Issue 32: nothing downloads unless a person opens a file. A thumbnailer run on an
/// online-only image, and a folder of them opened in Files (Nautilus, under Xvfb, default
/// settings), transfer no content; the server's request log is the witness.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct BackgroundReaderMountTests {
    /// A 48×32 PNG (a red-to-blue gradient).
    static let png = Data(base64Encoded: """
        iVBORw0KGgoAAAANSUhEUgAAADAAAAAgEAIAAACLJrAIAAAAj0lEQVRo3u3asQ2AMAwF0R8pRRiDVWBuGIU1QgcTwJVJcW8C62QsipTniX7U+0zaNnqMeRkIGAiUqydrGz3G\
        vNwgYCBgIFD7mSwG+uQGAQMBAwFvEHCDgIGAgUDtR7Lso8eYlxsEDAQMBPwPAm4QMBAwEPAGATcIGAiUtSVXHz3GvLxBwE8MGAiUJPEJzLcX1bdAbfcYS4cAAAAASUVORK5CYII=
        """)!

    @Test func aThumbnailerGetsNoContentUntilTheFileIsOnThisDevice() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        let item = try fixture.serverFile("plan.png", Self.png, in: "Riverside")
        let path = fixture.path("Riverside/plan.png")
        try #require(eventually(timeout: .seconds(15)) { FileManager.default.fileExists(atPath: path) })
        let thumbnail = fixture.root.appendingPathComponent("thumbnail.png")

        let refused = try run(Self.thumbnailer, ["-s", "128", path, thumbnail.path])
        #expect(refused.status != 0, "the thumbnailer read an online-only file")
        #expect(!FileManager.default.fileExists(atPath: thumbnail.path))
        #expect(contentRequests(fixture, item) == 0, "content was downloaded for a thumbnailer")
        #expect(fixture.daemonLog.contains("not downloading plan.png for gdk-pixbuf-thumbnailer"))
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state Riverside/plan.png").out == "online-only")

        // A person's read is served as ever.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Self.png)
        #expect(eventually { contentRequests(fixture, item) > 0 }, "the server's log shows no content sent for the read")

        // Kept on this device, it is a local file like any other.
        #expect(try fixture.sitefs(["pin", path]).status == 0)
        #expect(try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path]).status == 0)
        let downloads = contentRequests(fixture, item)
        let made = try run(Self.thumbnailer, ["-s", "128", path, thumbnail.path])
        #expect(made.status == 0, "\(made.err)")
        #expect(try Data(contentsOf: thumbnail).starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG thumbnail")
        #expect(contentRequests(fixture, item) == downloads, "nothing more downloaded")
    }

    /// Files opens a folder of online-only images. Four the server has pictures of: the
    /// daemon files those in the thumbnail cache while Files lists the folder, and Files
    /// shows them. Two it cannot picture (not really PNGs): GNOME's thumbnail factory runs
    /// its thumbnailer (sandboxed by bwrap) on them, which is refused (a failed-thumbnail
    /// record each, the type's icon shown). The server is asked for no content. The same
    /// with `--allow-background-downloads` downloads the two, which is what makes this test
    /// able to fail.
    @Test(arguments: [false, true])
    func aFolderOfImagesOpenedInFilesDownloadsNothing(allowingBackgroundDownloads: Bool) throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let desktop = try DesktopSession(in: fixture.root)
        defer { desktop.stop() }
        try desktop.mount(fixture, extraArguments: allowingBackgroundDownloads ? ["--allow-background-downloads"] : [])
        try #require(try fixture.shell("mkdir Riverside/Photos").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let pictured = try (1...4).map { try fixture.serverFile("photo-\($0).png", Self.png, in: "Riverside/Photos") }
        let broken = try (1...2).map { try fixture.serverFile("broken-\($0).png", Data("not a picture \($0)".utf8), in: "Riverside/Photos") }
        let items = pictured + broken
        try #require(eventually(timeout: .seconds(15)) {
            (try? FileManager.default.contentsOfDirectory(atPath: fixture.path("Riverside/Photos")).count) == items.count
        })

        try desktop.openInFiles(fixture.path("Riverside/Photos"), log: fixture.root.appendingPathComponent("nautilus.log"))
        // Every image has a thumbnail (the server's) or met the thumbnailer.
        let settled = eventually(timeout: .seconds(60), every: .milliseconds(200)) {
            desktop.madeThumbnails.count >= pictured.count && desktop.failedThumbnails.count + desktop.madeThumbnails.count >= items.count
        }
        try? desktop.screenshot(to: DesktopSession.artifacts.appendingPathComponent(
            "files-online-only\(allowingBackgroundDownloads ? "-downloads-allowed" : "").png"))
        #expect(settled, "thumbnails: \(desktop.madeThumbnails), failed: \(desktop.failedThumbnails); nautilus: \(String(decoding: (try? Data(contentsOf: fixture.root.appendingPathComponent("nautilus.log"))) ?? Data(), as: UTF8.self).suffix(2_000))")
        #expect(desktop.madeThumbnails.filter { $0.hasPrefix("large/") }.count >= pictured.count, "the server's pictures are in the cache")
        for item in pictured {
            #expect(serverThumbnailRequests(fixture, item) == 1, "\(item.name): one thumbnail request")
        }
        let downloaded = items.filter { contentRequests(fixture, $0) > 0 }
        if allowingBackgroundDownloads {
            #expect(Set(downloaded.map(\.name)) == Set(broken.map(\.name)), "the thumbnailer downloads what it may")
        } else {
            #expect(downloaded.isEmpty, "downloaded for thumbnails: \(downloaded.map(\.name))")
            #expect(desktop.failedThumbnails.count == broken.count, "\(desktop.failedThumbnails)")
            for item in items {
                #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state 'Riverside/Photos/\(item.name)'").out == "online-only")
            }
        }
    }

    /// How many times the server was asked for a file's thumbnail (its request log).
    private func serverThumbnailRequests(_ fixture: MountFixture, _ item: Item) -> Int {
        fixture.server.log.components(separatedBy: "GET /v1/items/\(item.id)/thumbnail").count - 1
    }

    static let thumbnailer = URL(fileURLWithPath: "/usr/bin/gdk-pixbuf-thumbnailer")

    /// How many times the server sent a file's content (its request log: 200 and 206
    /// answers, not a revalidation's 304).
    private func contentRequests(_ fixture: MountFixture, _ item: Item) -> Int {
        let request = "GET /v1/items/\(item.id)/content"
        return fixture.server.log.split(separator: "\n").filter { line in
            guard let start = line.range(of: request) else { return false }
            // After the path: an optional query ("?version=..."), then the status.
            let words = line[start.upperBound...].split(separator: " ").drop { $0.hasPrefix("?") }
            return words.first?.hasPrefix("2") == true
        }.count
    }
}
