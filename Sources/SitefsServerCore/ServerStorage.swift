import Foundation

/// The server's persistent state: metadata (SQLite in the data folder, or PostgreSQL) and
/// the blob folder. The admin commands and the HTTP server open it the same way.
public struct ServerStorage: Sendable {
    public let documents: DocumentStore
    public let accounts: AccountStore
    let metadata: MetadataStore

    public init(configuration: ServerConfiguration) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let database = try SQLiteMetadataDatabase(path: directory.appendingPathComponent("metadata.sqlite").path)
        let metadata = MetadataStore(database: database)
        self.metadata = metadata
        let blobs = try BlobStore(dataDirectory: directory)
        documents = try DocumentStore(metadata: metadata, blobs: blobs, maximumUploadBytes: configuration.maximumUploadBytes)
        accounts = AccountStore(metadata: metadata, tokenLifetimeSeconds: configuration.tokenLifetimeSeconds,
                                passwordIterations: configuration.passwordIterations, now: configuration.now)
    }

    /// Closes the database connections (PostgreSQL: the pool and its listener).
    public func close() async {
        await metadata.database.close()
    }
}
