/// The order of a search's results, the same on both stores: rank class first, then the
/// newest modified first, then the id (ascending), so the order is total and a keyset cursor
/// (`SearchPosition`) neither skips nor repeats an item while nothing changes.
///
/// Rank classes:
/// - 0: the name equals the query (folded), or equals it once its extension is left out;
/// - 1: every word is in the name;
/// - 2: some word matched only the text.
enum SearchRanking {
    /// An item found, with its rank class.
    struct Ranked: Sendable {
        let row: SearchRow
        let rankClass: Int64
    }

    /// Up to `query.limit + 1` items after `after` (one more than a page: whether another
    /// page follows).
    static func page(_ query: SearchQuery, after: SearchPosition?, engine: SQLEngine, statement: SearchStatement,
                     in db: any SQLTransaction, at now: Int64) throws -> [Ranked] {
        var arguments: [any SQLArgument] = statement.withArguments
        let nameTest = SearchSQL.nameContains(engine)
        let allInName = query.words.map { _ in nameTest }.joined(separator: " AND ")
        arguments += [query.phrase, query.phrase] + query.words.map(\.folded) + [now] + statement.arguments
        var conditions = statement.conditions
        for word in query.words {
            if let text = SearchSQL.textQuery(engine, tokens: word.tokens) {
                conditions.append("(\(nameTest) OR \(SearchSQL.textMatches(engine)))")
                arguments += [word.folded, text]
            } else {
                conditions.append("(\(nameTest))")
                arguments.append(word.folded)
            }
        }
        var outer = ""
        if let after {
            outer = "WHERE rank_class > ? OR (rank_class = ? AND (modified_at < ? OR (modified_at = ? AND id > ?)))"
            arguments += [after.rankClass, after.rankClass, after.modifiedAt, after.modifiedAt, after.id]
        }
        arguments.append(query.limit + 1)
        let sql = """
            \(statement.with)
            SELECT * FROM (
                SELECT items.*, \(LockRow.columns),
                    CASE WHEN items.name_folded = ? OR items.name_stem = ? THEN 0 WHEN \(allInName) THEN 1 ELSE 2 END AS rank_class
                FROM items LEFT JOIN locks ON locks.item_id = items.id AND locks.expires_at > ?
                WHERE \(conditions.joined(separator: " AND "))
            ) AS hits
            \(outer)
            ORDER BY rank_class, modified_at DESC, id
            LIMIT ?
            """
        return try db.rows(sql: sql, arguments: arguments).map { row in
            Ranked(row: SearchRow(item: try ItemRow(row: row), nameFolded: try row.text("name_folded")),
                   rankClass: try row.int("rank_class"))
        }
    }
}
