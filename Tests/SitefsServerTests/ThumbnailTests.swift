import Foundation
import HTTPTypes
import HummingbirdTesting
import SitefsAPI
import SitefsTestSupport
import Synchronization
import Testing
import ZIPFoundation
@testable import SitefsServerCore

/// `GET /v1/items/{id}/thumbnail`: real pictures (made by ImageMagick's `convert`, which
/// scripts/test installs), a hand-written PDF and office documents built here, through the
/// real libvips. Runs on both stores. One test at a time: they share the process's two
/// thumbnail slots, and work made ahead gives up rather than queue behind many others.
@Suite(.serialized) struct ThumbnailTests {
    // MARK: Pictures, PDFs and documents to thumbnail

    /// Bytes ImageMagick writes for `arguments` (the last one names the output, `png:-`).
    static func convert(_ arguments: [String]) throws -> [UInt8] {
        let format = try #require(arguments.last?.split(separator: ":").first, "no output named in \(arguments)")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("convert-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try run(URL(fileURLWithPath: "/usr/bin/convert"), arguments.dropLast() + ["\(format):\(output.path)"])
        try #require(result.status == 0, "convert \(arguments.joined(separator: " ")) failed: \(result.err)")
        return Array(try Data(contentsOf: output))
    }

    /// A `width` x `height` PNG picture.
    static func png(width: Int, height: Int) throws -> [UInt8] {
        try convert(["-size", "\(width)x\(height)", "gradient:teal-gold", "png:-"])
    }

    /// A one-page PDF of `width` x `height` points with a filled rectangle, xref and all.
    static func pdf(width: Int, height: Int) -> [UInt8] {
        let drawing = "0.2 0.4 0.8 rg 36 36 \(width - 72) \(height - 72) re f\n"
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(width) \(height)] /Contents 4 0 R /Resources << >> >>",
            "<< /Length \(drawing.utf8.count) >>\nstream\n\(drawing)endstream",
        ]
        var text = "%PDF-1.4\n"
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(text.utf8.count)
            text += "\(index + 1) 0 obj\n\(object)\nendobj\n"
        }
        let xref = text.utf8.count
        text += "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { text += String(repeating: "0", count: 10 - String(offset).count) + "\(offset) 00000 n \n" }
        text += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return Array(text.utf8)
    }

    /// An office document (a zip) with these entries, `mimetype` first and stored, as ODF
    /// requires.
    static func zip(_ entries: [(String, [UInt8])]) throws -> [UInt8] {
        let archive = try Archive(accessMode: .create)
        for (path, bytes) in entries {
            let data = Data(bytes)
            try archive.addEntry(with: path, type: .file, uncompressedSize: Int64(data.count),
                                 compressionMethod: path == "mimetype" ? .none : .deflate) { position, size in
                data.subdata(in: Int(position)..<Int(position) + size)
            }
        }
        return Array(try #require(archive.data))
    }

    static func odt(thumbnail: [UInt8]?) throws -> [UInt8] {
        var entries: [(String, [UInt8])] = [
            ("mimetype", Array("application/vnd.oasis.opendocument.text".utf8)),
            ("content.xml", Array(#"<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" office:version="1.3"/>"#.utf8)),
        ]
        if let thumbnail { entries.append(("Thumbnails/thumbnail.png", thumbnail)) }
        return try zip(entries)
    }

    /// A PNG whose header declares `width` x `height` pixels and which holds none.
    static func pngHeaderOnly(width: UInt32, height: UInt32) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
        }
        let header = bigEndian(width) + bigEndian(height) + [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IEND", [])
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// Width and height from a PNG's IHDR chunk (bytes 16..<24), or nil when not a PNG.
    static func dimensions(ofPNG bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else { return nil }
        func number(_ start: Int) -> Int { bytes[start..<start + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (number(16), number(20))
    }

    // MARK: Calling the route

    static func thumbnail(_ api: APIClient, _ id: String, size: String, version: String? = nil,
                          headers: HTTPFields = [:]) async throws -> TestResponse {
        try await api.send(.get, "/v1/items/\(id)/thumbnail" + APIClient.query(["size": size, "version": version]), headers: headers)
    }

    /// The PNG's dimensions of a `200` answer, checked for what every such answer carries.
    static func fetch(_ api: APIClient, _ file: Item, size: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws -> (width: Int, height: Int) {
        let response = try await thumbnail(api, file.id, size: String(size)).expect(.ok, sourceLocation: sourceLocation)
        #expect(response.headers[.contentType] == "image/png", sourceLocation: sourceLocation)
        #expect(response.headers[.cacheControl] == "private, max-age=31536000", sourceLocation: sourceLocation)
        let box = try #require(ThumbnailCache.box(for: size))
        #expect(response.headers[.eTag] == "\"\(file.etag)-\(box)\"", sourceLocation: sourceLocation)
        #expect(response.headers[.contentLength] == String(response.bytes.count), sourceLocation: sourceLocation)
        return try #require(dimensions(ofPNG: response.bytes), "not a PNG", sourceLocation: sourceLocation)
    }

    static func withSite(_ body: @Sendable @escaping (APIClient, Item, TestEnvironment) async throws -> Void) async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            try await body(try await APIClient.signedIn(client, user: "anna"), site, env)
        }
    }

    static func cached(_ env: TestEnvironment, _ file: Item, box: Int) -> Bool {
        FileManager.default.fileExists(atPath: ThumbnailCache(blobs: env.storage.blobs).path(blob: file.etag, box: box))
    }

    // MARK: Tests

    @Test func aPictureFitsTheBoxKeepsItsAspectAndIsNeverEnlarged() async throws {
        try await Self.withSite { api, site, env in
            let file = try await api.createFile("site photo.png", in: site.id, contents: try Self.png(width: 640, height: 480))
            #expect(try await Self.fetch(api, file, size: 100) == (128, 96))
            #expect(try await Self.fetch(api, file, size: 128) == (128, 96))
            #expect(try await Self.fetch(api, file, size: 200) == (256, 192))
            #expect(try await Self.fetch(api, file, size: 1024) == (640, 480))
            #expect(Self.cached(env, file, box: 128) && Self.cached(env, file, box: 1024))
            // Served again from the cache, byte for byte.
            let first = try await Self.thumbnail(api, file.id, size: "128").expect(.ok).bytes
            #expect(try await Self.thumbnail(api, file.id, size: "1").expect(.ok).bytes == first)
            let tall = try await api.createFile("pillar.jpg", in: site.id,
                                                contents: try Self.convert(["-size", "300x900", "gradient:", "jpg:-"]))
            #expect(try await Self.fetch(api, tall, size: 512) == (171, 512))
        }
    }

    @Test func aOneMegabyteJPEG() async throws {
        try await Self.withSite { api, site, _ in
            let jpeg = try Self.convert(["-size", "3000x2000", "gradient:navy-orange", "-attenuate", "0.5", "+noise", "Gaussian",
                                         "-quality", "85", "jpg:-"])
            let file = try await api.createFile("crane.jpeg", in: site.id, contents: jpeg)
            let clock = ContinuousClock()
            var dimensions = (width: 0, height: 0)
            let took = try await clock.measure { dimensions = try await Self.fetch(api, file, size: 512) }
            #expect(dimensions == (512, 341))
            print("thumbnail of a \(jpeg.count)-byte 3000x2000 JPEG at 512: \(took)")
        }
    }

    @Test func aPDFShowsItsFirstPage() async throws {
        try await Self.withSite { api, site, _ in
            let file = try await api.createFile("plan.pdf", in: site.id, contents: Self.pdf(width: 612, height: 792))
            let clock = ContinuousClock()
            var dimensions = (width: 0, height: 0)
            // 512: not the box made ahead, so this is made now.
            let took = try await clock.measure { dimensions = try await Self.fetch(api, file, size: 512) }
            #expect(dimensions.height == 512 && (394...397).contains(dimensions.width), "\(dimensions)")
            print("thumbnail of a one-page PDF at 512: \(took)")
            let landscape = try await api.createFile("site.PDF", in: site.id, contents: Self.pdf(width: 842, height: 595))
            let wide = try await Self.fetch(api, landscape, size: 128)
            #expect(wide.width == 128 && (89...92).contains(wide.height), "\(wide)")
        }
    }

    @Test func officeDocumentsShowTheirPreviewPicture() async throws {
        try await Self.withSite { api, site, env in
            let preview = try Self.png(width: 200, height: 150)
            let odt = try await api.createFile("minutes.odt", in: site.id, contents: try Self.odt(thumbnail: preview))
            #expect(try await Self.fetch(api, odt, size: 128) == (128, 96))
            #expect(try await Self.fetch(api, odt, size: 512) == (200, 150))
            let jpeg = try Self.convert(["-size", "180x240", "gradient:white-gray", "jpg:-"])
            let docx = try await api.createFile("report.docx", in: site.id,
                                                contents: try Self.zip([("[Content_Types].xml", Array("<Types/>".utf8)),
                                                                        ("docProps/thumbnail.jpeg", jpeg)]))
            #expect(try await Self.fetch(api, docx, size: 128) == (96, 128))
            // Without a preview picture: none, and that is remembered.
            let bare = try await api.createFile("bare.ods", in: site.id, contents: try Self.odt(thumbnail: nil))
            let missing = try await Self.thumbnail(api, bare.id, size: "128")
            try missing.expect(.notFound)
            #expect(missing.errorCode == "no_thumbnail")
            #expect(ThumbnailCache(blobs: env.storage.blobs).lookup(blob: bare.etag, box: 128) == .none)
        }
    }

    @Test func otherTypesFoldersAndBadContentHaveNoThumbnailNeverA500() async throws {
        try await Self.withSite { api, site, env in
            let text = try await api.createFile("notes.txt", in: site.id, text: "hello")
            let folder = try await api.createFolder("Photos", in: site.id)
            let corrupt = try await api.createFile("broken.png", in: site.id, contents: Array(repeating: 0x42, count: 5000))
            let truncated = try await api.createFile("cut.png", in: site.id, contents: Array(try Self.png(width: 64, height: 64).prefix(40)))
            // An SVG named .png: libvips could load it, but only the allowed loaders run.
            let svg = try await api.createFile("vector.png", in: site.id, contents: Array(
                #"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100"/></svg>"#.utf8))
            let huge = try await api.createFile("bomb.png", in: site.id, contents: Self.pngHeaderOnly(width: 100_000, height: 100_000))
            let notAZip = try await api.createFile("fake.odt", in: site.id, text: "not a zip")
            for item in [text, folder, corrupt, truncated, svg, huge, notAZip] {
                let response = try await Self.thumbnail(api, item.id, size: "256")
                try response.expect(.notFound)
                #expect(response.errorCode == "no_thumbnail", "\(item.name)")
                #expect(response.headers[.contentType] == "application/json")
            }
            #expect(ThumbnailCache(blobs: env.storage.blobs).lookup(blob: corrupt.etag, box: 512) == .none)
            try await Self.thumbnail(api, corrupt.id, size: "512").expect(.notFound)
            // A site is no file either.
            #expect(try await Self.thumbnail(api, site.id, size: "64").expect(.notFound).errorCode == "no_thumbnail")
        }
    }

    @Test func theSizeIsAWholeNumberFrom1To1024() async throws {
        try await Self.withSite { api, site, _ in
            let file = try await api.createFile("a.png", in: site.id, contents: try Self.png(width: 20, height: 10))
            for size in ["0", "1025", "2000", "-1", "abc", "1.5", "", "99999999999999999999999", "%FF"] {
                let response = try await Self.thumbnail(api, file.id, size: size)
                try response.expect(.badRequest)
                #expect(response.errorCode == "bad_request", "size=\(size)")
            }
            try await api.send(.get, "/v1/items/\(file.id)/thumbnail").expect(.badRequest)
            #expect(try await Self.fetch(api, file, size: 1) == (20, 10))
            #expect(try await Self.fetch(api, file, size: 1024) == (20, 10))
            // Checked before the item: a bad size for an unknown id is still a 400.
            try await Self.thumbnail(api, "AAAAAAAAAAAAAAAAAAAAAA", size: "0").expect(.badRequest)
        }
    }

    @Test func aVersionOtherThanTheCurrentIs412() async throws {
        try await Self.withSite { api, site, _ in
            let v1 = try await api.createFile("a.png", in: site.id, contents: try Self.png(width: 40, height: 40))
            let v2 = try await api.put(v1.id, contents: try Self.png(width: 80, height: 40), ifMatch: v1.etag).expect(.ok).decode(Item.self)
            let stale = try await Self.thumbnail(api, v1.id, size: "128", version: v1.etag)
            try stale.expect(.preconditionFailed)
            let body = try stale.decode(ErrorResponse.self)
            #expect(body.error.code == "version_mismatch")
            #expect(body.item?.etag == v2.etag)
            try await Self.thumbnail(api, v1.id, size: "128", version: "nonsense").expect(.preconditionFailed)
            let current = try await Self.thumbnail(api, v1.id, size: "128", version: v2.etag).expect(.ok)
            #expect(try #require(Self.dimensions(ofPNG: current.bytes)) == (80, 40))
        }
    }

    @Test func ifNoneMatchNamingTheVersionAndBoxIs304() async throws {
        try await Self.withSite { api, site, _ in
            let file = try await api.createFile("a.png", in: site.id, contents: try Self.png(width: 300, height: 300))
            let hit = try await Self.thumbnail(api, file.id, size: "200", headers: [.ifNoneMatch: "\"\(file.etag)-256\""])
            try hit.expect(.notModified)
            #expect(hit.body.readableBytes == 0)
            #expect(hit.headers[.eTag] == "\"\(file.etag)-256\"")
            // Another box, or the content's own etag, is another picture.
            try await Self.thumbnail(api, file.id, size: "512", headers: [.ifNoneMatch: "\"\(file.etag)-256\""]).expect(.ok)
            try await Self.thumbnail(api, file.id, size: "256", headers: [.ifNoneMatch: "\"\(file.etag)\""]).expect(.ok)
        }
    }

    @Test func accessIsTheContentRoutes() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        try await env.user("cleo")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.site("Riverside", grantedTo: ["ben"])
        try await env.storage.accounts.grant(user: "cleo", site: "Harbour", readOnly: true)
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let file = try await anna.createFile("a.png", in: site.id, contents: try Self.png(width: 30, height: 30))
            let ben = try await APIClient.signedIn(client, user: "ben")
            let content = try await ben.send(.get, "/v1/items/\(file.id)/content")
            let thumbnail = try await Self.thumbnail(ben, file.id, size: "128")
            #expect(content.status == .notFound && thumbnail.status == .notFound)
            #expect(thumbnail.errorCode == content.errorCode)
            try await Self.thumbnail(APIClient(client), file.id, size: "128").expect(.unauthorized)
            // Read-only access reads thumbnails as it reads content.
            let cleo = try await APIClient.signedIn(client, user: "cleo")
            #expect(try await Self.fetch(cleo, file, size: 128) == (30, 30))
        }
    }

    @Test func storingAVersionMakesIts256ThumbnailAhead() async throws {
        try await Self.withSite { api, site, env in
            let v1 = try await api.createFile("façade.png", in: site.id, contents: try Self.png(width: 900, height: 600))
            #expect(await eventually(timeout: .seconds(20), every: .milliseconds(20)) { Self.cached(env, v1, box: 256) })
            let v2 = try await api.put(v1.id, contents: try Self.png(width: 600, height: 900), ifMatch: v1.etag).expect(.ok).decode(Item.self)
            #expect(await eventually(timeout: .seconds(20), every: .milliseconds(20)) { Self.cached(env, v2, box: 256) })
            // Only that box: the others are made when asked for.
            #expect(!Self.cached(env, v2, box: 128) && !Self.cached(env, v2, box: 512))
            let made = try Data(contentsOf: URL(fileURLWithPath: ThumbnailCache(blobs: env.storage.blobs).path(blob: v2.etag, box: 256)))
            #expect(try #require(Self.dimensions(ofPNG: Array(made))) == (171, 256))
        }
    }

    @Test func thumbnailsGoWithTheirBlob() async throws {
        try await Self.withSite { api, site, env in
            let cache = ThumbnailCache(blobs: env.storage.blobs)
            let file = try await api.createFile("a.png", in: site.id, contents: try Self.png(width: 50, height: 50))
            _ = try await Self.fetch(api, file, size: 128)
            _ = try await Self.fetch(api, file, size: 256)
            try await api.send(.delete, "/v1/items/\(file.id)").expect(.noContent)
            env.storage.blobs.finishRemovals()  // they go after the answer
            #expect(!Self.cached(env, file, box: 128) && !Self.cached(env, file, box: 256))
            // Left behind (a crash between the two deletions): the collector takes it, and
            // nothing whose blob is still there.
            let kept = try await api.createFile("b.png", in: site.id, contents: try Self.png(width: 50, height: 50))
            _ = try await Self.fetch(api, kept, size: 512)
            let orphan = BlobStore.newName()
            try cache.store(try Self.png(width: 8, height: 8), blob: orphan, box: 1024)
            try cache.storeFailure(blob: BlobStore.newName())
            let report = try await env.storage.collectUnreferencedBlobs(gracePeriod: 3600)
            #expect(report.thumbnailsRemoved == 2)
            #expect(cache.lookup(blob: orphan, box: 1024) == .missing)
            #expect(Self.cached(env, kept, box: 512))
            #expect(try await Self.fetch(api, kept, size: 512) == (50, 50))
        }
    }

    @Test func cacheFileNamesAreParsedStrictly() {
        let blob = BlobStore.newName()
        #expect(ThumbnailCache.blobName(ofFile: "\(blob)-256.png") == blob)
        #expect(ThumbnailCache.blobName(ofFile: "\(blob).none") == blob)
        for name in ["\(blob)-300.png", "\(blob).png", "-256.png", "\(blob)-256.jpg", "x-256.png", ".none", "\(blob)-.png"] {
            #expect(ThumbnailCache.blobName(ofFile: name) == nil, "\(name)")
        }
        #expect(ThumbnailCache.box(for: 1) == 128 && ThumbnailCache.box(for: 129) == 256 && ThumbnailCache.box(for: 1024) == 1024)
        #expect(ThumbnailCache.box(for: 0) == nil && ThumbnailCache.box(for: 1025) == nil)
    }

    /// Fills a gate's slots with work that runs until `release` is signalled once for each.
    static func occupy(_ gate: ThumbnailGate, release: DispatchSemaphore) async throws -> [Task<Int, any Error>] {
        let holders = (0..<gate.slots).map { _ in Task { try await gate.run { release.wait(); return 1 } } }
        try #require(await eventually(timeout: .seconds(20), every: .milliseconds(20)) { gate.load.running == gate.slots })
        return holders
    }

    /// With every slot taken, a caller waits its patience out and is then told to come back
    /// (503 busy with Retry-After); the slots' work is unharmed.
    @Test func aCallerWaitingTooLongIsRefused() async throws {
        let gate = ThumbnailGate(slots: 2, maximumWaiting: 4, patience: .milliseconds(300))
        let release = DispatchSemaphore(value: 0)
        let holders = try await Self.occupy(gate, release: release)
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await gate.run { 0 }
            Issue.record("a caller was admitted while every slot was taken")
        } catch let error as APIError {
            #expect(error.status == .serviceUnavailable && error.code == "busy")
            #expect(error.headers[.retryAfter] == "5")
        }
        #expect(clock.now - start >= .milliseconds(250))
        #expect(gate.load.waiting == 0)
        release.signal()
        release.signal()
        for holder in holders { #expect(try await holder.value == 1) }
        #expect(gate.load.running == 0)
    }

    /// Beyond the queue a caller is refused at once; a freed slot goes to the one waiting.
    @Test func aFullQueueRefusesAtOnceAndAFreedSlotGoesToTheNext() async throws {
        let gate = ThumbnailGate(slots: 2, maximumWaiting: 1, patience: .seconds(30))
        let release = DispatchSemaphore(value: 0)
        let holders = try await Self.occupy(gate, release: release)
        let waiter = Task { try await gate.run { 3 } }
        #expect(await eventually(timeout: .seconds(20), every: .milliseconds(20)) { gate.load.waiting == 1 })
        await #expect(throws: APIError.self) { try await gate.run { 0 } }
        // Background work accepts a shorter queue.
        await #expect(throws: APIError.self) { try await gate.run(maximumWaiting: 0) { 0 } }
        release.signal()
        #expect(try await waiter.value == 3)
        release.signal()
        for holder in holders { #expect(try await holder.value == 1) }
        #expect(gate.load.running == 0 && gate.load.waiting == 0)
    }
}
