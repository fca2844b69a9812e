import Foundation

/// The server's persistent state in one data directory: `metadata.sqlite` and `blobs/`.
/// The admin commands and the HTTP server open it the same way.
public struct ServerStorage: Sendable {
    public let documents: DocumentStore
    public let accounts: AccountStore

    public init(configuration: ServerConfiguration) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let metadata = try MetadataStore(path: directory.appendingPathComponent("metadata.sqlite").path)
        let blobs = try BlobStore(dataDirectory: directory)
        documents = try DocumentStore(metadata: metadata, blobs: blobs, maximumUploadBytes: configuration.maximumUploadBytes)
        accounts = AccountStore(metadata: metadata, tokenLifetimeSeconds: configuration.tokenLifetimeSeconds,
                                passwordIterations: configuration.passwordIterations, now: configuration.now)
    }
}
