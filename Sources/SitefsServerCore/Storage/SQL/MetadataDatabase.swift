/// Where the server keeps its metadata: SQLite in the data folder (the embedded default) or
/// PostgreSQL shared by several instances. The document and account code is written once
/// against this and `SQLTransaction`; nothing above this line knows which engine runs.
///
/// Both engines promise the same two things, which the change feed and conditional saves
/// rely on:
/// - a `read` sees one consistent snapshot for all its statements;
/// - `write` transactions run one at a time (SQLite has one writer; PostgreSQL takes one
///   advisory lock first), so a condition checked inside one still holds at its commit, and
///   change-feed sequence numbers become visible in the order they were taken.
protocol MetadataDatabase: Sendable {
    /// Which engine runs the SQL: the few statements that cannot be one text on both (the
    /// full-text index of search, `SearchSQL`) are chosen by it.
    var engine: SQLEngine { get }
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T
    /// `write`, blocking the calling thread: for startup only (the server's keys are read
    /// while the storage is opened, as the engine's own migrations are), never per request.
    func writeBlocking<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) throws -> T
    /// Calls `observer` after a write that extended the change feed commits, in this process
    /// or (PostgreSQL) another instance, with the sites whose feeds it extended (nil: maybe
    /// any, e.g. after notifications may have been missed): what wakes change-feed long-polls.
    func observeCommits(_ observer: @escaping @Sendable (Set<Int64>?) -> Void)
    /// Closes connections; further calls fail.
    func close()
}

/// The engines a `MetadataDatabase` runs on.
enum SQLEngine: Sendable {
    case sqlite
    case postgres
}
