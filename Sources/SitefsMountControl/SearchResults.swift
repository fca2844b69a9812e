import Foundation

/// One page of the daemon's answer to `user.sitefs.control.results` on a search folder
/// (and `user.sitefs.control.results:NEXT` for the pages after it).
public struct SearchResultsPage: Decodable, Sendable, Equatable {
    /// "server" (names and text, everything the user may see) or "listed_names" (names only,
    /// over the folders this mount has listed: the server does not search).
    public var coverage: String
    public var note: String?
    public var hits: [SearchResultHit]
    /// The token of the next page; nil on the last.
    public var next: String?
    public var error: String?

    public init(coverage: String, note: String? = nil, hits: [SearchResultHit], next: String? = nil, error: String? = nil) {
        self.coverage = coverage
        self.note = note
        self.hits = hits
        self.next = next
        self.error = error
    }
}

/// One item found, as the daemon shows it.
public struct SearchResultHit: Codable, Sendable, Equatable {
    /// Its name in the search folder; null for a folder, which a search folder does not
    /// hold (a folder cannot have two parents in the kernel's tree).
    public var entry: String?
    /// Where it is, relative to the mount point.
    public var path: String
    /// "name", "content".
    public var matched: [String]
    public var snippet: String?
    /// RFC 3339.
    public var modifiedAt: String
    public var size: Int64
    /// "file" or "folder".
    public var kind: String

    public init(entry: String?, path: String, matched: [String], snippet: String?, modifiedAt: String, size: Int64, kind: String) {
        self.entry = entry
        self.path = path
        self.matched = matched
        self.snippet = snippet
        self.modifiedAt = modifiedAt
        self.size = size
        self.kind = kind
    }

    enum CodingKeys: String, CodingKey {
        case entry, path, matched, snippet, size, kind
        case modifiedAt = "modified_at"
    }

    /// Why this hit cannot be shown as a path under the mount, or nil when it can: a path
    /// that is empty, absolute, or climbs out (`..`), or holds NUL; a negative size.
    public var problem: String? {
        if path.isEmpty || path.hasPrefix("/") { return "its path is not relative to the mount" }
        if path.contains("\u{0}") { return "its path holds NUL" }
        if path.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }) {
            return "its path has an empty, '.' or '..' part"
        }
        if size < 0 { return "its size is negative" }
        return nil
    }
}

/// Reads every page of a search's results, in the order the daemon gives them (it ranks:
/// the server's order, newest first), handing each page to `receive` as it comes.
public enum SearchResultsReader {
    /// The control attribute of the first page; later pages add `:` and the token.
    public static let attribute = "user.sitefs.control.results"
    /// Most pages followed: far more than any search shows, but a daemon answering with
    /// tokens forever still ends.
    public static let maximumPages = 10_000
    /// Longest attribute name Linux takes (XATTR_NAME_MAX).
    public static let maximumAttributeNameBytes = 255

    /// `read` reads one attribute of the search folder and decodes it. A page whose `error`
    /// is set ends the reading with that error, after the pages before it were received.
    public static func readAll(read: (String) throws -> SearchResultsPage,
                               receive: (SearchResultsPage) throws -> Void) throws {
        var name = attribute
        var seen: Set<String> = []
        for _ in 0..<maximumPages {
            let page = try read(name)
            try receive(page)
            if let error = page.error { throw SearchReadError.daemon(error) }
            guard let next = page.next else { return }
            guard !next.isEmpty, !next.contains("\u{0}"), attribute.utf8.count + 1 + next.utf8.count <= maximumAttributeNameBytes else {
                throw SearchReadError.badToken
            }
            guard seen.insert(next).inserted else { throw SearchReadError.repeatedToken }
            name = attribute + ":" + next
        }
        throw SearchReadError.tooManyPages
    }
}

public enum SearchReadError: Error, Equatable, CustomStringConvertible {
    /// The daemon's own words (a server unreachable, a search it refused).
    case daemon(String)
    case badToken
    case repeatedToken
    case tooManyPages

    public var description: String {
        switch self {
        case .daemon(let message): return message
        case .badToken: return "the daemon's answer names a next page that cannot be asked for"
        case .repeatedToken: return "the daemon's answer names the same page twice"
        case .tooManyPages: return "the results go on for more than \(SearchResultsReader.maximumPages) pages; stopped"
        }
    }
}
