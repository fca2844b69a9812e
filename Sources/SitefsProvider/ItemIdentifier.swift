/// Identity of a server item. Server ids are only unique within a site (and a server may
/// reuse them across accounts), so identity is the pair, as the File Provider model keys it.
public struct ItemIdentifier: Hashable, Sendable, CustomStringConvertible {
    public let site: String
    public let id: String

    public init(site: String, id: String) {
        self.site = site
        self.id = id
    }

    /// A site's own identifier (a site is the root folder of its tree).
    public static func site(_ site: String) -> ItemIdentifier { ItemIdentifier(site: site, id: site) }

    public var isSite: Bool { site == id }
    public var description: String { "\(site)/\(id)" }
}
