import Foundation

/// Identity of a server item. Server ids are only unique within a site (and a server may
/// reuse them across accounts), so identity is the pair, as the File Provider model keys it.
///
/// A file created on the mount is *local* until its first upload: it gets an id with
/// `localPrefix`, which no server id may carry (responses using it are refused), and is
/// re-keyed to the server's id once the server has created it.
public struct ItemIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let site: String
    public let id: String

    public init(site: String, id: String) {
        self.site = site
        self.id = id
    }

    /// A site's own identifier (a site is the root folder of its tree).
    public static func site(_ site: String) -> ItemIdentifier { ItemIdentifier(site: site, id: site) }

    /// Marks ids made on this machine for items the server does not have yet.
    public static let localPrefix = "local:"

    /// A fresh identifier for a file created here, in `site`.
    public static func local(in site: String) -> ItemIdentifier {
        ItemIdentifier(site: site, id: localPrefix + UUID().uuidString.lowercased())
    }

    /// Marks the lock files the mount shows beside a document someone else holds a lock on
    /// (`.~lock.NAME#`, see `LockFileBackend`): made here from the document's lock, never
    /// on the server. No server id may carry it either.
    public static let lockFilePrefix = "lockfile:"

    /// The lock file shown beside `document` while someone else holds its lock.
    public static func lockFile(of document: ItemIdentifier) -> ItemIdentifier {
        ItemIdentifier(site: document.site, id: lockFilePrefix + document.id)
    }

    /// For a lock file's identifier, the document it stands beside.
    public var lockedDocument: ItemIdentifier? {
        guard id.hasPrefix(Self.lockFilePrefix) else { return nil }
        return ItemIdentifier(site: site, id: String(id.dropFirst(Self.lockFilePrefix.count)))
    }

    public var isSite: Bool { site == id }
    /// Created here and not on the server yet.
    public var isLocal: Bool { id.hasPrefix(Self.localPrefix) }
    public var description: String { "\(site)/\(id)" }
}
