/// `GET /v1/search` bodies: what matched, where it is, and where in it the words were.

/// A folder on the way from a site (first) down to a hit's parent.
public struct PathElement: Codable, Sendable, Equatable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

/// One item a search found.
public struct SearchResult: Codable, Sendable, Equatable {
    public var item: Item
    /// The site first, the item's parent last (empty for a site itself).
    public var path: [PathElement]
    /// Where the words were found: "name", "content", or both.
    public var matched: [String]
    /// A few words of the text around the first match; null when only the name matched.
    public var snippet: String?

    public init(item: Item, path: [PathElement], matched: [String], snippet: String?) {
        self.item = item
        self.path = path
        self.matched = matched
        self.snippet = snippet
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(item, forKey: .item)
        try c.encode(path, forKey: .path)
        try c.encode(matched, forKey: .matched)
        try c.encode(snippet, forKey: .snippet)  // explicit null: the field is always present
    }

    enum CodingKeys: String, CodingKey { case item, path, matched, snippet }
}

/// `GET /v1/search`: one page of results, best first.
public struct SearchResultPage: Codable, Sendable, Equatable {
    public var results: [SearchResult]
    /// Opaque; nil on the last page.
    public var nextCursor: String?

    public init(results: [SearchResult], nextCursor: String?) {
        self.results = results
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey {
        case results
        case nextCursor = "next_cursor"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(results, forKey: .results)
        try c.encode(nextCursor, forKey: .nextCursor)
    }
}
