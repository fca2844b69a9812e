/// One page of an enumeration and the opaque token of the next (nil: the last page).
/// Paging bounds memory for huge folders: the filesystem asks for the next page only when
/// the kernel reads on.
public struct Page: Sendable {
    public var items: [ProviderItem]
    public var next: PageToken?
    /// Items of the server's page the backend could not represent faithfully (a name that
    /// cannot be a file name, an impossible size, an item of another folder), each with why:
    /// left out of `items` for the filesystem to log, rather than failing the whole listing;
    /// likewise a lock left out of an item that is listed (a lock the backend cannot show).
    public var refused: [String]

    public init(items: [ProviderItem], next: PageToken?, refused: [String] = []) {
        self.items = items
        self.next = next
        self.refused = refused
    }
}

/// A server cursor, passed back as it came.
public struct PageToken: Hashable, Sendable {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// What changed on the server since a token (`/v1/changes`).
public struct ChangeBatch: Sendable {
    public enum Change: Sendable, Equatable {
        case updated(ProviderItem)
        case deleted(ItemIdentifier)
    }

    public var changes: [Change]
    public var next: PageToken
    public var hasMore: Bool
    /// Reports left out because their item could not be represented (see `Page.refused`).
    public var refused: [String]

    public init(changes: [Change], next: PageToken, hasMore: Bool, refused: [String] = []) {
        self.changes = changes
        self.next = next
        self.hasMore = hasMore
        self.refused = refused
    }
}
