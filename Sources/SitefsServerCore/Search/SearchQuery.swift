import SitefsAPI

/// A search as asked (`GET /v1/search`), checked: every parameter within its bounds before
/// anything is looked up, each problem a 400 with its own code.
public struct SearchQuery: Sendable, Equatable {
    /// One word of `q`: what its name test compares (`folded`) and what its text test
    /// matches as word prefixes (`tokens`; empty when the word has no letter or digit, and
    /// then only names can match it).
    struct Word: Sendable, Equatable {
        let folded: String
        let tokens: [String]
    }

    let words: [Word]
    /// The folded words joined by single spaces: rank class 0 is a name (or a name without its
    /// extension) equal to it.
    let phrase: String
    public var site: String?
    public var folder: String?
    /// A file extension, folded, without its dot.
    let type: String?
    public var since: Timestamp?
    public var cursor: String?
    public var limit: Int

    /// Words per query, and characters per word: a query is a few words, and each costs a
    /// test of every candidate name.
    public static let maximumWords = 8
    public static let maximumWordLength = 64
    /// The whole of `q` (bytes), spaces included.
    public static let maximumQueryBytes = 1024
    /// An extension for `type`.
    public static let maximumTypeLength = 16

    /// Checks the parameters; throws `APIError`s (400) naming the one that is wrong.
    public init(q: String?, site: String? = nil, folder: String? = nil, type: String? = nil, since: Timestamp? = nil,
                cursor: String? = nil, limit: Int = DocumentStore.defaultPageSize) throws {
        guard let q else { throw APIError.badRequest("give the words to look for: ?q=WORDS", code: "empty_query") }
        guard q.utf8.count <= Self.maximumQueryBytes else {
            throw APIError.badRequest("q is at most \(Self.maximumQueryBytes) bytes", code: "query_too_long")
        }
        let raw = q.split(whereSeparator: { $0.isWhitespace })
        guard raw.count <= Self.maximumWords else {
            throw APIError.badRequest("q has at most \(Self.maximumWords) words", code: "too_many_words")
        }
        var words: [Word] = []
        for word in raw {
            guard word.count <= Self.maximumWordLength else {
                throw APIError.badRequest("a word of q has at most \(Self.maximumWordLength) characters", code: "word_too_long")
            }
            let folded = SearchFolding.fold(String(word))
            // A word of combining marks alone folds to nothing, which every name contains.
            guard !folded.isEmpty else { continue }
            words.append(Word(folded: folded, tokens: SearchFolding.tokens(ofFolded: folded).map(String.init)))
        }
        guard !words.isEmpty else { throw APIError.badRequest("q has no word to look for", code: "empty_query") }
        self.words = words
        phrase = words.map(\.folded).joined(separator: " ")
        self.site = site
        self.folder = folder
        if let type {
            let bare = type.hasPrefix(".") ? String(type.dropFirst()) : type
            guard !bare.isEmpty, bare.count <= Self.maximumTypeLength,
                  bare.unicodeScalars.allSatisfy(SearchFolding.isTokenScalar)
            else {
                throw APIError.badRequest("type is a file extension: 1 to \(Self.maximumTypeLength) letters or digits",
                                          code: "bad_type")
            }
            self.type = SearchFolding.fold(bare)
        } else {
            self.type = nil
        }
        self.since = since
        self.cursor = cursor
        guard (1...DocumentStore.maximumPageSize).contains(limit) else {
            throw APIError.badRequest("'limit' must be a whole number from 1 to \(DocumentStore.maximumPageSize)")
        }
        self.limit = limit
    }

    /// What a cursor of this search is bound to: the same words and filters (a cursor of
    /// another search would name a position in another order).
    var identity: String {
        ([phrase, site ?? "", folder ?? "", type ?? "", since.map { String($0.microseconds) } ?? ""]).joined(separator: "\u{1F}")
    }
}
