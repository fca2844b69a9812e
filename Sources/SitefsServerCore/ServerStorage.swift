import Foundation
import Logging

/// The server's persistent state: metadata (SQLite in the data folder, or PostgreSQL) and
/// the blob folder. The admin commands and the HTTP server open it the same way.
public struct ServerStorage: Sendable {
    public let documents: DocumentStore
    public let accounts: AccountStore
    /// Reads the text of stored versions into the search index (`serve` runs it).
    public let searchIndexer: SearchIndexer
    let metadata: MetadataStore
    let blobs: BlobStore

    public init(configuration: ServerConfiguration) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let database: any MetadataDatabase
        if let location = configuration.database {
            database = try PostgresMetadataDatabase(
                location: location, connections: configuration.databaseConnections, logger: Logger(label: "sitefs-server.database"))
        } else {
            database = try SQLiteMetadataDatabase(path: directory.appendingPathComponent("metadata.sqlite").path)
        }
        try self.init(configuration: configuration, database: database)
    }

    /// Over a database opened by the caller (tests that hold a transaction open).
    init(configuration: ServerConfiguration, database: any MetadataDatabase) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let metadata = MetadataStore(database: database)
        self.metadata = metadata
        let blobs = try BlobStore(dataDirectory: directory)
        self.blobs = blobs
        documents = try DocumentStore(metadata: metadata, blobs: blobs, maximumUploadBytes: configuration.maximumUploadBytes,
                                      clock: configuration.now)
        searchIndexer = SearchIndexer(documents: documents, logger: Logger(label: "sitefs-server.search"))
        accounts = AccountStore(metadata: metadata, tokenLifetimeSeconds: configuration.tokenLifetimeSeconds,
                                passwordIterations: configuration.passwordIterations, now: configuration.now)
    }

    /// Removes blobs no version refers to that are older than `gracePeriod` seconds, and
    /// abandoned staging files (see `BlobCollector`). `serve` runs it every hour.
    public func collectUnreferencedBlobs(gracePeriod: TimeInterval = 3600, now: Date = Date()) async throws -> BlobCollectionReport {
        try await BlobCollector(metadata: metadata, blobs: blobs).collect(gracePeriod: gracePeriod, now: now)
    }

    /// Finishes the blob removals under way and closes the database connections
    /// (PostgreSQL: the pool and its listener).
    public func close() {
        blobs.finishRemovals()
        metadata.database.close()
    }
}
