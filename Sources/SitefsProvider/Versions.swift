import SitefsAPI

/// One stored version of a file's content, as the server keeps it.
public struct ItemVersion: Sendable, Equatable {
    /// The version's id: what `fetchContent(version:)` and `restore(_:version:)` take.
    public var identifier: String
    public var size: Int64
    public var modified: Timestamp
    /// Who stored it (the account's name), when the server says.
    public var modifiedBy: String?

    public init(identifier: String, size: Int64, modified: Timestamp, modifiedBy: String?) {
        self.identifier = identifier
        self.size = size
        self.modified = modified
        self.modifiedBy = modifiedBy
    }
}
