import SitefsAPI

extension DocumentStore {
    /// Text read for snippets per page (UTF-8 bytes): a page of many large documents that
    /// all matched by text gets snippets until this much has been read, and null after.
    static let snippetBudgetBytes = 64 << 20
    /// Folders from a site down to an item (`path`); an item deeper shows the deepest ones.
    static let maximumPathDepth = 256

    /// One page of the items `query` finds among the sites `caller` may see (granted, or all
    /// for the administrator), best first (`SearchRanking`).
    ///
    /// Every word must match the item's name (a substring of the folded name) or its indexed
    /// text (a word starting with it). Items of ungranted sites are never read, so neither
    /// their names nor their text reach the answer. One read transaction: the page, its
    /// `matched` and snippets, and its paths come from one snapshot.
    public func search(_ query: SearchQuery, for caller: Caller) async throws -> SearchResultPage {
        let after = try query.cursor.map { try SearchPosition.decode($0, with: cursors, query: query, for: caller) }
        let engine = metadata.database.engine
        let now = clock().microseconds
        return try await metadata.read { db in
            var sql = SearchStatement()
            let access = try Self.siteAccess(of: caller, in: db)
            try scope(query, for: caller, into: &sql, in: db, at: now)
            let rows = try SearchRanking.page(query, after: after, engine: engine, statement: sql, in: db, at: now)
            let page = rows.prefix(query.limit)
            let contentHits = try Self.contentHits(query, among: page.map(\.row.id), engine: engine, in: db)
            let paths = try Self.paths(of: page.map(\.row), ids: ids, in: db)
            let snippets = try Self.snippets(for: page.map(\.row.id).filter { contentHits[$0] != nil }, prefixes: contentHits, in: db)
            var results: [SearchResult] = []
            for hit in page {
                let row = hit.row
                var matched: [String] = []
                if query.words.contains(where: { row.nameFolded.containsBytes($0.folded) }) { matched.append("name") }
                if contentHits[row.id] != nil { matched.append("content") }
                let snippet = snippets[row.id]
                results.append(SearchResult(item: row.item.item(access: access(row.item.siteID), ids: ids),
                                            path: paths[row.item.id] ?? [], matched: matched, snippet: snippet))
            }
            let next = rows.count > query.limit ? page.last.map { last in
                SearchPosition(rankClass: last.rankClass, modifiedAt: last.row.item.modifiedAt, id: last.row.id)
                    .encode(with: cursors, query: query, for: caller)
            } : nil
            return SearchResultPage(results: results, nextCursor: next)
        }
    }

    /// Which sites the search covers and where in them (`site`, `folder`): an unknown or
    /// ungranted site or folder is 404, as on the item routes.
    private func scope(_ query: SearchQuery, for caller: Caller, into sql: inout SearchStatement, in db: any SQLTransaction,
                       at now: Int64) throws {
        if let userID = caller.userID {
            sql.condition("items.site_id IN (SELECT site_id FROM grants WHERE user_id = ?)", [userID])
        }
        if let site = query.site {
            let visible = try VisibleItem.find(site, ids: ids, for: caller, in: db, at: now)
            guard visible.row.kind == .site else {
                throw APIError.badRequest("'site' names a site; use 'folder' for a folder", code: "not_a_site")
            }
            sql.condition("items.site_id = ? AND items.id <> ?", [visible.row.id, visible.row.id])
        }
        if let folder = query.folder {
            let visible = try VisibleItem.find(folder, ids: ids, for: caller, in: db, at: now)
            guard visible.row.isContainer else {
                throw APIError.badRequest("'\(visible.row.name)' is a file, not a folder", code: "not_a_folder")
            }
            // Everything below the folder: the tree under it, each item once (a tree has no
            // cycle: moves into one's own subtree are refused), so the recursion ends.
            sql.with = """
                WITH RECURSIVE below(id) AS (
                    SELECT id FROM items WHERE parent_id = ?
                    UNION ALL SELECT items.id FROM items JOIN below ON items.parent_id = below.id)
                """
            sql.withArguments = [visible.row.id]
            sql.condition("items.id IN (SELECT id FROM below)", [])
        }
        if let type = query.type {
            sql.condition("items.kind = 'file' AND items.symlink_target IS NULL AND items.name_folded LIKE ?", ["%.\(type)"])
        }
        if let since = query.since {
            sql.condition("items.modified_at >= ?", [since.microseconds])
        }
    }

    /// The caller's access per site (the administrator's is read-write everywhere).
    private static func siteAccess(of caller: Caller, in db: any SQLTransaction) throws -> (Int64) -> SiteAccess {
        guard let userID = caller.userID else { return { _ in .readWrite } }
        var grants: [Int64: SiteAccess] = [:]
        for row in try db.rows(sql: "SELECT site_id, read_only FROM grants WHERE user_id = ?", arguments: [userID]) {
            grants[try row.int("site_id")] = try row.bool("read_only") ? .readOnly : .readWrite
        }
        // Only granted sites' items are found, so the fallback is never used.
        return { grants[$0] ?? .readOnly }
    }

    /// Per item of the page whose text matched some word, the tokens of those words (what
    /// the snippet looks for).
    private static func contentHits(_ query: SearchQuery, among ids: [Int64], engine: SQLEngine,
                                    in db: any SQLTransaction) throws -> [Int64: [String]] {
        guard !ids.isEmpty else { return [:] }
        var hits: [Int64: [String]] = [:]
        for word in query.words {
            guard let match = SearchSQL.textQuery(engine, tokens: word.tokens) else { continue }
            for id in try db.ints(sql: SearchSQL.textMatchesAmong(engine, count: ids.count), arguments: [match] + ids) {
                hits[id, default: []].append(contentsOf: word.tokens)
            }
        }
        return hits
    }

    /// Items whose texts are read in one query for their snippets.
    static let snippetBatch = 10

    /// The snippets of the items `ids` (in page order), their texts read `snippetBatch` at a
    /// time while the page's budget (`snippetBudgetBytes`) lasts; items past it get none.
    private static func snippets(for ids: [Int64], prefixes: [Int64: [String]], in db: any SQLTransaction) throws -> [Int64: String] {
        var snippets: [Int64: String] = [:]
        var budget = snippetBudgetBytes
        var start = 0
        while start < ids.count && budget > 0 {
            let batch = Array(ids[start..<min(ids.count, start + snippetBatch)])
            start += batch.count
            let placeholders = Array(repeating: "?", count: batch.count).joined(separator: ", ")
            for row in try db.rows(sql: "SELECT item_id, text FROM search_text WHERE item_id IN (\(placeholders))", arguments: batch) {
                let id = try row.int("item_id")
                let text = try row.text("text")
                budget -= text.utf8.count
                snippets[id] = SearchSnippet.make(from: text, prefixes: prefixes[id] ?? [])
            }
        }
        return snippets
    }

    /// Each row's folders from its site down to its parent, looked up a level at a time for
    /// the whole page (one query per level, at most `maximumPathDepth`).
    private static func paths(of rows: [SearchRow], ids: ItemIDCodec, in db: any SQLTransaction) throws -> [Int64: [PathElement]] {
        var known: [Int64: (parent: Int64?, name: String)] = [:]
        var wanted = Set(rows.compactMap(\.item.parentID))
        var depth = 0
        while !wanted.isEmpty && depth < maximumPathDepth {
            depth += 1
            let list = Array(wanted)
            let placeholders = Array(repeating: "?", count: list.count).joined(separator: ", ")
            wanted = []
            for row in try db.rows(sql: "SELECT id, parent_id, name FROM items WHERE id IN (\(placeholders))", arguments: list) {
                let parent = try row.optionalInt("parent_id")
                known[try row.int("id")] = (parent, try row.text("name"))
                if let parent, known[parent] == nil { wanted.insert(parent) }
            }
        }
        var paths: [Int64: [PathElement]] = [:]
        for row in rows {
            var path: [PathElement] = []
            var next = row.item.parentID
            while let id = next, let entry = known[id], path.count < maximumPathDepth {
                path.append(PathElement(id: ids.apiID(for: id), name: entry.name))
                next = entry.parent
            }
            paths[row.item.id] = path.reversed()
        }
        return paths
    }
}

/// A search's statement as it is put together: a `WITH` clause (the folder filter) and the
/// conditions on `items`, each with its arguments in the order of their placeholders.
struct SearchStatement {
    var with = ""
    var withArguments: [any SQLArgument] = []
    var conditions: [String] = []
    var arguments: [any SQLArgument] = []

    mutating func condition(_ sql: String, _ values: [any SQLArgument]) {
        conditions.append("(\(sql))")
        arguments += values
    }
}

/// An item found, with the folded name the page's `matched` is worked out from.
struct SearchRow: Sendable {
    let item: ItemRow
    let nameFolded: String
    var id: Int64 { item.id }
}
