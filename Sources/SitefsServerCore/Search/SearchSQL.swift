import SitefsAPI

/// The few pieces of search's SQL that differ between the engines; everything else is one
/// text on both. What they are handed is already folded and tokenized in Swift
/// (`SearchFolding`), so each engine only compares bytes and matches simple word prefixes,
/// and both find the same items.
enum SearchSQL {
    /// A test that the folded name contains the bound text (byte for byte: both functions
    /// compare characters of valid UTF-8 exactly).
    static func nameContains(_ engine: SQLEngine) -> String {
        switch engine {
        case .sqlite: return "instr(items.name_folded, ?) > 0"
        case .postgres: return "strpos(items.name_folded, ?) > 0"
        }
    }

    /// A test that the item's indexed text has a word starting with each of the bound
    /// query's tokens (`textQuery`): the set of matching ids, taken from the index once per
    /// statement. (On PostgreSQL a correlated `EXISTS` let a folder filter check its few
    /// items one by one, but the planner then also chose that for searches without filters,
    /// probing the texts of all 100,000 documents: 202 ms instead of 17 for a name.)
    static func textMatches(_ engine: SQLEngine) -> String {
        switch engine {
        case .sqlite: return "items.id IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ?)"
        case .postgres: return "items.id IN (SELECT item_id FROM search_text WHERE words_tsv @@ to_tsquery('simple', ?))"
        }
    }

    /// The ids of `ids` whose text matches the bound query, for the `matched` of a page.
    static func textMatchesAmong(_ engine: SQLEngine, count: Int) -> String {
        let list = Array(repeating: "?", count: count).joined(separator: ", ")
        switch engine {
        case .sqlite: return "SELECT rowid AS id FROM search_fts WHERE search_fts MATCH ? AND rowid IN (\(list))"
        case .postgres:
            return "SELECT item_id AS id FROM search_text WHERE words_tsv @@ to_tsquery('simple', ?) AND item_id IN (\(list))"
        }
    }

    /// The engine's query for "a word starting with each token": FTS5 `"t"* AND "u"*`,
    /// PostgreSQL `t:* & u:*`. Tokens hold only letters and digits (`SearchFolding.tokens`),
    /// so nothing in them is query syntax; one that is not is refused here all the same.
    static func textQuery(_ engine: SQLEngine, tokens: [String]) -> String? {
        guard !tokens.isEmpty, tokens.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(SearchFolding.isTokenScalar) })
        else { return nil }
        switch engine {
        case .sqlite: return tokens.map { "\"\($0)\"*" }.joined(separator: " AND ")
        case .postgres: return tokens.map { "\($0):*" }.joined(separator: " & ")
        }
    }

    /// What claiming jobs adds on PostgreSQL: instances claim at once without waiting on each
    /// other's rows (writes are serialised by the store's lock already; this keeps a claim
    /// correct should that ever change). SQLite has one writer and no such clause.
    static func skipLocked(_ engine: SQLEngine) -> String {
        switch engine {
        case .sqlite: return ""
        case .postgres: return " FOR UPDATE SKIP LOCKED"
        }
    }

    /// Run first in a search's transaction. PostgreSQL's planner prices the GIN index's
    /// prefix lookups as random reads from disk and, for texts of a few thousand documents,
    /// prefers reading every tsvector instead (measured: 17 ms against 3 ms for a word no
    /// text has, 10,000 documents); the index and the texts it points to are in memory on
    /// a server that searches, which this setting (for this transaction only) tells it.
    static func transactionSettings(_ engine: SQLEngine) -> [String] {
        switch engine {
        case .sqlite: return []
        case .postgres: return ["SET LOCAL random_page_cost = 1.1"]
        }
    }
}
