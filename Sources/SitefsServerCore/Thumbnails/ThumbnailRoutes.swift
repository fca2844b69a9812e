import Hummingbird
import SitefsAPI

/// `GET /v1/items/{id}/thumbnail?size=N[&version=ETAG]`: a PNG of the file's current version
/// fitting in a `size` x `size` square (made at the freedesktop box `size` rounds up to: 128,
/// 256, 512 or 1024), aspect kept, never enlarged beyond the source.
///
/// Access is the content route's: the same lookup, so a caller who may not read the file
/// gets exactly what `GET .../content` gives. The answer for one version and box never
/// changes, hence the long `Cache-Control` and an `ETag` of version and box.
struct ThumbnailRoutes {
    let thumbnails: Thumbnails
    let fileIO = FileIO()

    func thumbnail(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let query = try QueryParameters(request.uri.query)
        // Checked before anything is looked up: a bad request is a 400 whatever the item.
        let size = try query.requiredInteger("size", in: ThumbnailCache.sizes)
        guard let box = ThumbnailCache.box(for: size) else { throw APIError.badRequest("'size' must be from 1 to 1024") }
        let id: String = try context.parameters.require("id")
        let source = try await thumbnails.documents.thumbnailSource(
            of: id, version: try query.string("version"), for: try context.requireCaller())
        guard ThumbnailFormat.of(name: source.name) != nil, source.size <= Thumbnails.maximumSourceBytes else {
            throw APIError.noThumbnail
        }
        let etag = "\(source.etag)-\(box)"
        var headers: HTTPFields = [
            .eTag: ConditionalHeaders.quoted(etag),
            .cacheControl: "private, max-age=31536000",
        ]
        if ConditionalHeaders.ifNoneMatchHits(request, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "image/png"
        switch try await thumbnails.picture(of: source, itemID: id, box: box) {
        case .file(let path, let length):
            headers[.contentLength] = String(length)
            return Response(status: .ok, headers: headers, body: try await fileIO.loadFile(path: path, context: context))
        case .bytes(let png):
            headers[.contentLength] = String(png.count)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: png)))
        }
    }
}
