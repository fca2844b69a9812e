import Foundation
import SitefsAPI
import SitefsHTTP
import SitefsProvider

/// Search on sitefs-server (`GET /v1/search`): names and document text, over every site the
/// user may see, ranked by the server. Each result is checked like a listed item
/// (`SearchValidation`); one that fails is left out with its reason (`SearchPage.refused`)
/// and the rest of the page stands.
extension HTTPDocumentBackend {
    /// The server searches. One that predates search answers the first search with 404 for
    /// the route, which `search` reports as `search_unsupported` (`isMissingRoute`).
    public var searchSupport: SearchSupport { .server }

    public func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage {
        let parameters: KeyValuePairs<String, String?> = [
            "q": query.words,
            "site": query.site?.id,
            "folder": query.folder?.id,
            "type": query.fileExtension,
            "since": query.modifiedSince?.rfc3339,
            "cursor": token?.rawValue,
            "limit": String(min(max(limit, 1), Self.largestSearchPage)),
        ]
        let request = HTTPRequest(method: .get, path: "/v1/search" + Self.query(parameters))
        let response = try send(request)
        guard response.isSuccess else {
            if response.status == 404, Self.isMissingRoute(response) {
                throw .refused(status: 501, code: "search_unsupported", message: "this server does not search (it predates GET /v1/search)")
            }
            throw Self.error(for: response)
        }
        let page: SearchResultPage
        do {
            page = try JSONDecoder().decode(SearchResultPage.self, from: Data(response.body))
        } catch {
            throw .invalidResponse("malformed search results from GET /v1/search: \(error)")
        }
        return try SearchValidation.page(page, for: query, held: heldLocks.lockIDs())
    }

    /// A 404 for the route rather than for an item: sitefs-server answers a path it has no
    /// route for with `not_found` and the message "no such endpoint" (an unknown site or
    /// folder is "no such item"); another server, with any code but `not_found`.
    static func isMissingRoute(_ response: HTTPResponse) -> Bool {
        guard let body = try? JSONDecoder().decode(ErrorResponse.self, from: Data(response.body)) else { return true }
        return body.error.code != "not_found" || body.error.message == "no such endpoint"
    }

    /// Most results asked for per page (the server's own page limit).
    static let largestSearchPage = 1000
}
