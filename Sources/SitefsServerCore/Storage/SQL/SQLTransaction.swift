/// One open transaction of the metadata database, as the document and account code sees it.
///
/// The statements are the same text on both engines: `?` placeholders, `RETURNING` for new
/// ids, `ON CONFLICT` for upserts, recursive CTEs; nothing either engine lacks. Each engine
/// (`SQLiteMetadataDatabase`, `PostgresMetadataDatabase`) implements the two primitives.
protocol SQLTransaction {
    /// Runs a statement and returns its rows (none for most writes).
    func rows(sql: String, arguments: [any SQLArgument]) throws -> [SQLRow]
    /// Runs a statement whose rows, if any, are not wanted.
    func execute(sql: String, arguments: [any SQLArgument]) throws
    /// The change feed gained an entry in `site`: once this transaction commits, the
    /// long-polls of callers who see that site wake (here and on other instances), and no
    /// others.
    func changed(site: Int64)
}

/// The sites a write transaction extended the change feed of (`SQLTransaction.changed`),
/// told to commit observers once it has committed.
final class ChangedSites: @unchecked Sendable {
    // @unchecked: filled by the one thread running the transaction, read after it returns.
    private(set) var sites: Set<Int64> = []
    func insert(_ site: Int64) { sites.insert(site) }
}

extension SQLTransaction {
    func execute(sql: String) throws {
        try execute(sql: sql, arguments: [])
    }

    func row(sql: String, arguments: [any SQLArgument] = []) throws -> SQLRow? {
        try rows(sql: sql, arguments: arguments).first
    }

    /// The first column of the first row, when it is there and not NULL.
    func int(sql: String, arguments: [any SQLArgument] = []) throws -> Int64? {
        guard let row = try rows(sql: sql, arguments: arguments).first, let column = row.firstColumn else { return nil }
        return try row.optionalInt(column)
    }

    /// The first column of every row.
    func ints(sql: String, arguments: [any SQLArgument] = []) throws -> [Int64] {
        try rows(sql: sql, arguments: arguments).map { row in try row.int(row.firstColumn ?? "") }
    }

    /// The first column of every row.
    func texts(sql: String, arguments: [any SQLArgument] = []) throws -> [String] {
        try rows(sql: sql, arguments: arguments).map { row in try row.text(row.firstColumn ?? "") }
    }

    /// Whether the query returns any row.
    func exists(sql: String, arguments: [any SQLArgument] = []) throws -> Bool {
        try !rows(sql: sql, arguments: arguments).isEmpty
    }
}
