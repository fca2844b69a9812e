import Logging
import SitefsAPI

/// Thumbnails of files: found in the cache, or made (through the gate) and cached; and made
/// ahead, in the background, when a version is stored.
///
/// A thumbnail is made of a file's current version only, at one of `ThumbnailCache.boxes`.
/// Content it cannot be made from (corrupt, too large, an office document without a preview
/// picture) is `404 no_thumbnail`, logged once at info and remembered in the cache, never a
/// 500: bad content is the uploader's business, not a server failure.
struct Thumbnails: Sendable {
    let documents: DocumentStore
    let cache: ThumbnailCache
    let gate: ThumbnailGate
    let logger: Logger

    /// Larger files are not thumbnailed: a PDF or TIFF that size holds a slot for long, and a
    /// picture of it is rarely what anyone waits for.
    static let maximumSourceBytes: Int64 = 200 << 20
    /// The box made ahead when a version is stored: what file managers ask for first ("large",
    /// 256). Other sizes are made on first request.
    static let premadeBox = 256
    /// Background work waits behind at most this many others, so uploads in bulk never fill
    /// the queue that requests wait in.
    static let backgroundWaiting = 4

    enum Picture: Sendable {
        /// A PNG in the cache, with its length.
        case file(path: String, size: Int64)
        /// A PNG just made (and cached).
        case bytes([UInt8])
    }

    /// The thumbnail of `source` in a `box` x `box` square. Throws `no_thumbnail`, or `busy`
    /// when the gate's queue is full or the wait too long.
    func picture(of source: DocumentStore.ThumbnailSource, itemID: String, box: Int, inBackground: Bool = false) async throws -> Picture {
        guard let format = ThumbnailFormat.of(name: source.name), source.size <= Self.maximumSourceBytes,
              let box32 = Int32(exactly: box), ThumbnailCache.boxes.contains(box)
        else { throw APIError.noThumbnail }
        switch cache.lookup(blob: source.blob, box: box) {
        case .thumbnail(let path, let size): return .file(path: path, size: size)
        case .none: throw APIError.noThumbnail
        case .missing: break
        }
        let outcome = try await gate.run(maximumWaiting: inBackground ? Self.backgroundWaiting : nil) { [cache] () -> Outcome in
            // Another request (or instance) may have made it while this one waited.
            switch cache.lookup(blob: source.blob, box: box) {
            case .thumbnail(let path, let size): return .cached(path: path, size: size)
            case .none: return .failedBefore
            case .missing: break
            }
            let png: [UInt8]
            do throws(ThumbnailMaker.Failure) {
                png = try Self.make(format, from: source.path, box: box32)
            } catch {
                return .failed(reason: error.description, unrecorded: Self.record { try cache.storeFailure(blob: source.blob) })
            }
            return .made(png, unrecorded: Self.record { try cache.store(png, blob: source.blob, box: box) })
        }
        switch outcome {
        case .cached(let path, let size):
            return .file(path: path, size: size)
        case .made(let png, let unrecorded):
            if let unrecorded { logger.warning("thumbnail of item \(itemID) not cached: \(unrecorded)") }
            return .bytes(png)
        case .failedBefore:
            throw APIError.noThumbnail
        case .failed(let reason, let unrecorded):
            logger.info("no thumbnail of item \(itemID) (\(source.size) bytes, \(format)): \(reason)")
            if let unrecorded { logger.warning("failed thumbnail of item \(itemID) not recorded: \(unrecorded)") }
            throw APIError.noThumbnail
        }
    }

    /// Makes the `premadeBox` thumbnail of a version just stored, in a task of its own: the
    /// upload's answer never waits for it. It waits in the gate like any request (behind few
    /// others) and gives up quietly when busy, or when the file has changed again meanwhile;
    /// the thumbnail is then made on first request.
    func prepare(_ item: Item, by caller: Caller) {
        guard item.kind == .file, ThumbnailFormat.of(name: item.name) != nil else { return }
        Task.detached { [self] in
            do {
                let source = try await documents.thumbnailSource(of: item.id, version: item.etag, for: caller)
                _ = try await picture(of: source, itemID: item.id, box: Self.premadeBox, inBackground: true)
            } catch {
                logger.debug("thumbnail of item \(item.id) not made ahead: \(error)")
            }
        }
    }

    private enum Outcome: Sendable {
        case cached(path: String, size: Int64)
        case made([UInt8], unrecorded: String?)
        case failedBefore
        case failed(reason: String, unrecorded: String?)
    }

    /// Blocking: runs in the gate.
    private static func make(_ format: ThumbnailFormat, from path: String, box: Int32) throws(ThumbnailMaker.Failure) -> [UInt8] {
        switch format {
        case .image, .pdf:
            return try ThumbnailMaker.png(ofFile: path, box: box)
        case .officeDocument(let family):
            return try ThumbnailMaker.png(ofImage: try OfficeThumbnail.picture(inDocumentAt: path, family: family), box: box)
        }
    }

    /// nil when `write` succeeded, else why not (a cache that cannot be written costs time,
    /// not correctness).
    private static func record(_ write: () throws -> Void) -> String? {
        do {
            try write()
            return nil
        } catch {
            return "\(error)"
        }
    }
}
