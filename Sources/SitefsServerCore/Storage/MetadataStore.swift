/// The server's metadata database, whichever engine holds it (see `MetadataDatabase`),
/// with the signal change-feed long-polls wait on.
struct MetadataStore: Sendable {
    let database: any MetadataDatabase
    /// Rung after every write transaction commits here, and (PostgreSQL) when another
    /// instance says it committed one.
    let commits = CommitSignal()

    init(database: any MetadataDatabase) {
        self.database = database
        let commits = self.commits
        database.observeCommits { commits.committed() }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        try await database.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLTransaction) throws -> T) async throws -> T {
        let result = try await database.write(body)
        commits.committed()
        return result
    }
}
