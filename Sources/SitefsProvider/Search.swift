import SitefsAPI

/// A search as a person asked it: words matched against item names (any part, ignoring case
/// and accents) and the text of documents (word prefixes), narrowed by filters. Every word
/// must match, in the name or in the text.
public struct SearchQuery: Sendable, Equatable {
    /// What was typed, as typed (the backend folds case and accents).
    public var words: String
    /// Only items in this site.
    public var site: ItemIdentifier?
    /// Only items under this folder, at any depth.
    public var folder: ItemIdentifier?
    /// Only files whose name ends in `.` + this extension (lowercase, no dot: "pdf").
    public var fileExtension: String?
    /// Only items modified at or after this time.
    public var modifiedSince: Timestamp?

    public init(words: String, site: ItemIdentifier? = nil, folder: ItemIdentifier? = nil, fileExtension: String? = nil,
                modifiedSince: Timestamp? = nil) {
        self.words = words
        self.site = site
        self.folder = folder
        self.fileExtension = fileExtension
        self.modifiedSince = modifiedSince
    }
}

/// Where a search word was found in a hit.
public struct SearchMatch: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let name = SearchMatch(rawValue: 1 << 0)
    public static let content = SearchMatch(rawValue: 1 << 1)
}

/// One item a search found, with where it is: `ancestors` are the folders from its site
/// (first) down to its parent (last), each as identifier and name, so the mount can name its
/// path without a lookup per level.
public struct SearchHit: Sendable {
    public var item: ProviderItem
    public var ancestors: [(identifier: ItemIdentifier, name: String)]
    public var matched: SearchMatch
    /// A few words of the document's text around the first match (from a document the caller
    /// may read), when the match was in the text.
    public var snippet: String?

    public init(item: ProviderItem, ancestors: [(identifier: ItemIdentifier, name: String)], matched: SearchMatch,
                snippet: String? = nil) {
        self.item = item
        self.ancestors = ancestors
        self.matched = matched
        self.snippet = snippet
    }
}

/// One page of hits, best first (see the server's ranking), and the token of the next.
public struct SearchPage: Sendable {
    public var hits: [SearchHit]
    public var next: PageToken?
    /// Hits the backend could not represent (see `Page.refused`).
    public var refused: [String]

    public init(hits: [SearchHit], next: PageToken?, refused: [String] = []) {
        self.hits = hits
        self.next = next
        self.refused = refused
    }
}

/// Whether the server searches (names and document text, over everything the user may see)
/// or the mount must search by name over what it has listed itself.
public enum SearchSupport: Sendable, Equatable {
    case server
    case unsupported(reason: String)
}
