import Hummingbird
import SitefsAPI

/// File bytes: ranged and conditional downloads, conditional uploads, both streamed.
struct ContentRoutes {
    let documents: DocumentStore
    /// Made ahead for each version stored (`Thumbnails.prepare`).
    let thumbnails: Thumbnails
    let fileIO = FileIO()

    func download(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let query = try QueryParameters(request.uri.query)
        let location = try await documents.content(
            of: try context.parameters.require("id"), version: try query.string("version"), for: try context.requireCaller())
        var headers: HTTPFields = [
            .eTag: ConditionalHeaders.quoted(location.etag),
            .acceptRanges: "bytes",
            .contentType: location.contentType,
        ]
        if ConditionalHeaders.ifNoneMatchHits(request, etag: location.etag) {
            return Response(status: .notModified, headers: headers)
        }
        if let range = try ConditionalHeaders.byteRange(request, size: location.size) {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(location.size)"
            headers[.contentLength] = String(range.count)
            let body = try await fileIO.loadFile(
                path: location.path, range: Int(range.lowerBound)...Int(range.upperBound), context: context)
            return Response(status: .partialContent, headers: headers, body: body)
        }
        headers[.contentLength] = String(location.size)
        let body = location.size == 0 ? ResponseBody() : try await fileIO.loadFile(path: location.path, context: context)
        return Response(status: .ok, headers: headers, body: body)
    }

    func upload(_ request: Request, context: ServerRequestContext) async throws -> Response {
        if let declared = request.headers[.contentLength].flatMap(Int64.init), declared > documents.maximumUploadBytes {
            throw APIError.contentTooLarge(limit: documents.maximumUploadBytes)
        }
        let modifiedAt = try QueryParameters(request.uri.query).timestamp("modified_at")
        let caller = try context.requireCaller()
        let item = try await documents.replaceContent(
            of: try context.parameters.require("id"), body: request.body, condition: ConditionalHeaders.ifMatch(request),
            by: caller, modifiedAt: modifiedAt, locks: try LockRoutes.tokens(in: request))
        thumbnails.prepare(item, by: caller)
        return JSONBody.response(item, headers: [.eTag: ConditionalHeaders.quoted(item.etag)])
    }
}
