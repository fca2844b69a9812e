/// The server's metadata database, whichever engine holds it (see `MetadataDatabase`),
/// with the signal change-feed long-polls wait on.
struct MetadataStore: Sendable {
    let database: any MetadataDatabase
    /// Rung, with the sites concerned, after each write that extended the change feed
    /// commits here, and (PostgreSQL) when another instance says it committed one.
    let commits = CommitSignal()

    init(database: any MetadataDatabase) {
        self.database = database
        let commits = self.commits
        database.observeCommits { sites in commits.committed(sites: sites) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await database.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await database.write(body)
    }
}
