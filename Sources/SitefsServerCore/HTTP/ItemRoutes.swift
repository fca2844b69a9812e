import HTTPTypes
import Hummingbird
import SitefsAPI

/// Metadata routes: sites, items, children, versions, the change feed.
struct ItemRoutes {
    let documents: DocumentStore
    /// Made ahead for each file created (`Thumbnails.prepare`).
    let thumbnails: Thumbnails

    func sites(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let query = try QueryParameters(request.uri.query)
        let limit = try Self.pageLimit(query)
        let page = try await documents.sites(cursor: try query.string("cursor"), limit: limit, for: try context.requireCaller())
        return JSONBody.response(page, headers: Self.nextLink(page, "/v1/sites", limit: limit))
    }

    func item(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let item = try await documents.item(try context.parameters.require("id"), for: try context.requireCaller())
        return JSONBody.response(item, headers: [.eTag: ConditionalHeaders.quoted(item.etag)])
    }

    func children(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let query = try QueryParameters(request.uri.query)
        let folder = try context.parameters.require("id")
        let limit = try Self.pageLimit(query)
        let page = try await documents.children(of: folder, cursor: try query.string("cursor"), limit: limit,
                                                for: try context.requireCaller())
        return JSONBody.response(page, headers: Self.nextLink(page, "/v1/items/\(folder)/children", limit: limit))
    }

    /// The next page's address as an RFC 8288 `Link` (`rel="next"`), the same cursor as the
    /// body's `next_cursor`: a client can ask for the next page before it has decoded this
    /// one. None on the last page. Cursors and item ids are URL-safe base64, so neither
    /// needs escaping; anything else (never expected) gets no header rather than a wrong one.
    static func nextLink(_ page: ItemPage, _ path: String, limit: Int) -> HTTPFields {
        guard let cursor = page.nextCursor, (path + cursor).utf8.allSatisfy(isPlainURLByte) else { return [:] }
        return [linkHeader: "<\(path)?limit=\(limit)&cursor=\(cursor)>; rel=\"next\""]
    }

    private static func isPlainURLByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }

    static let linkHeader = HTTPField.Name("Link")!

    /// Creates a folder or a symbolic link (JSON body) or a file (`?name=` and the bytes as
    /// the body).
    func create(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let parent = try context.parameters.require("id")
        let caller = try context.requireCaller()
        let query = try QueryParameters(request.uri.query)
        // Checked whatever is created: a malformed time is a 400, never silently ignored.
        let modifiedAt = try query.timestamp("modified_at")
        let item: Item
        if let nameBytes = query.bytes("name") {
            // One meaning per request: JSON makes folders, so a JSON body with ?name= is
            // neither a folder (which takes no name parameter) nor clearly a file.
            if let type = request.headers[.contentType], type.lowercased().hasPrefix("application/json") {
                throw APIError(.unsupportedMediaType, code: "unsupported_media_type",
                               "a file's bytes are sent as application/octet-stream (or any type but JSON) with ?name=; JSON creates folders, without ?name=")
            }
            do { try ItemName.validate(utf8: nameBytes) } catch { throw APIError.invalidName(error) }
            let name = String(decoding: nameBytes, as: UTF8.self)
            if let declared = request.headers[.contentLength].flatMap(Int64.init), declared > documents.maximumUploadBytes {
                throw APIError.contentTooLarge(limit: documents.maximumUploadBytes)
            }
            item = try await documents.createFile(named: name, in: parent, body: request.body, by: caller,
                                                  modifiedAt: modifiedAt)
            thumbnails.prepare(item, by: caller)
        } else {
            let new = try await JSONBody.decode(NewFolder.self, from: request, context: context)
            switch (new.kind, new.symlinkTarget) {
            case (.folder, nil):
                item = try await documents.createFolder(named: new.name, in: parent, by: caller)
            case (.symlink, let target?):
                item = try await documents.createSymlink(named: new.name, in: parent, target: target, by: caller)
            case (.symlink, nil):
                throw APIError.badRequest("a symlink needs its symlink_target", code: "invalid_target")
            default:
                throw APIError.badRequest("JSON creates folders and symlinks only; send a file's bytes with ?name=", code: "bad_kind")
            }
        }
        return JSONBody.response(item, status: .created, headers: [.eTag: ConditionalHeaders.quoted(item.etag)])
    }

    func update(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let patch = try await JSONBody.decode(ItemPatch.self, from: request, context: context)
        let item = try await documents.update(
            try context.parameters.require("id"), with: patch, condition: ConditionalHeaders.ifMatch(request),
            by: try context.requireCaller(), locks: try LockRoutes.tokens(in: request))
        return JSONBody.response(item, headers: [.eTag: ConditionalHeaders.quoted(item.etag)])
    }

    func delete(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try await documents.delete(
            try context.parameters.require("id"), condition: ConditionalHeaders.ifMatch(request), by: try context.requireCaller(),
            locks: try LockRoutes.tokens(in: request))
        return Response(status: .noContent)
    }

    func versions(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let versions = try await documents.versions(of: try context.parameters.require("id"), for: try context.requireCaller())
        return JSONBody.response(VersionList(versions: versions))
    }

    /// `POST /v1/items/{id}/versions/{etag}/restore`: that version's content becomes the
    /// newest version (`DocumentStore.restore`), under `If-Match` and the lock tokens sent,
    /// as an upload is. The item as it is then, with its new etag.
    func restore(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let caller = try context.requireCaller()
        let item = try await documents.restore(
            try context.parameters.require("id"), version: try context.parameters.require("etag"),
            condition: ConditionalHeaders.ifMatch(request), by: caller, locks: try LockRoutes.tokens(in: request))
        thumbnails.prepare(item, by: caller)
        return JSONBody.response(item, headers: [.eTag: ConditionalHeaders.quoted(item.etag)])
    }

    func changes(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let query = try QueryParameters(request.uri.query)
        let wait = try query.integer("wait", in: 0...DocumentStore.longestChangeWait, default: 0)
        let cursor = try query.string("cursor")
        let caller = try context.requireCaller()
        // The first look answers at once, with its own status for a bad cursor or sign-in.
        let page = try await documents.changes(since: cursor, for: caller)
        guard wait > 0, cursor != nil, page.changes.isEmpty else { return JSONBody.response(page) }
        return HeldChangeAnswer.response(empty: page) { [documents] in
            try await documents.changes(since: cursor, for: caller, waitingUpTo: .seconds(wait))
        }
    }

    static func pageLimit(_ query: QueryParameters) throws -> Int {
        try query.integer("limit", in: 1...DocumentStore.maximumPageSize, default: DocumentStore.defaultPageSize)
    }
}
