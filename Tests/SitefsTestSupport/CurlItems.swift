import Foundation
import SitefsAPI

/// The server's tree through API v1, as another client reads it (for tests to check what a
/// mount did, and to act on the server by path).
extension Curl {
    public func sites() throws -> [Item] {
        try JSONDecoder().decode(ItemPage.self, from: Data(call("GET", "/v1/sites").body.utf8)).items
    }

    /// Every child of a folder, page after page.
    public func children(of id: String) throws -> [Item] {
        var items: [Item] = []
        var cursor: String?
        repeat {
            let page = try JSONDecoder().decode(ItemPage.self, from: Data(call(
                "GET", "/v1/items/\(id)/children?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? "")).body.utf8))
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// The item at a path of names ("Harbour Tower/Plans/a.txt"), or nil.
    public func item(atPath path: String) throws -> Item? {
        let components = path.split(separator: "/").map(String.init)
        guard let siteName = components.first, var current = try sites().first(where: { $0.name == siteName }) else { return nil }
        for name in components.dropFirst() {
            guard let next = try children(of: current.id).first(where: { $0.name == name }) else { return nil }
            current = next
        }
        return current
    }
}
