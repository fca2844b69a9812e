import Hummingbird
import SitefsAPI

/// `GET /v1/search?q=WORDS[&site=ID][&folder=ID][&type=EXT][&since=RFC3339][&cursor=C][&limit=N]`:
/// items of the caller's sites whose name or text has the words (`DocumentStore.search`).
struct SearchRoutes {
    let documents: DocumentStore

    func search(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let parameters = try QueryParameters(request.uri.query)
        // Every parameter is checked before anything is looked up.
        let since: Timestamp?
        do {
            since = try parameters.timestamp("since")
        } catch {
            throw APIError.badRequest("'since' is an RFC 3339 time, e.g. 2024-05-01T00:00:00Z", code: "bad_since")
        }
        let query = try SearchQuery(
            q: try parameters.string("q"), site: try parameters.string("site"), folder: try parameters.string("folder"),
            type: try parameters.string("type"), since: since, cursor: try parameters.string("cursor"),
            limit: try ItemRoutes.pageLimit(parameters))
        return JSONBody.response(try await documents.search(query, for: try context.requireCaller()))
    }
}
