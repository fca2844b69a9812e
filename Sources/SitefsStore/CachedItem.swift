import SitefsAPI
import SitefsProvider

/// One item as the item cache keeps it, in about 130 bytes (a `ProviderItem` and its time
/// are 220), for a cache that holds every entry of a listing.
///
/// What the items of a folder have in common (site, parent, authors) is kept once, in a
/// `Context` the items share; what nearly no item has (a lock, a link target) is kept behind
/// one optional reference. `item` gives the `ProviderItem` back as it was stored, every
/// string with the same bytes (copies share their storage; nothing is decoded again).
/// Immutable: a change stores a new one.
final class CachedItem: Sendable {
    /// The site, parent and authors of items: shared by consecutive items that have the
    /// same (compared as bytes).
    final class Context: Sendable {
        let site: String
        let parent: ItemIdentifier?
        let createdBy: String
        let modifiedBy: String

        init(of item: ProviderItem) {
            site = item.identifier.site
            parent = item.parent
            createdBy = item.createdBy
            modifiedBy = item.modifiedBy
        }

        func fits(_ item: ProviderItem) -> Bool {
            ItemName.same(site, item.identifier.site) && ItemName.same(createdBy, item.createdBy)
                && ItemName.same(modifiedBy, item.modifiedBy) && Self.same(parent, item.parent)
        }

        private static func same(_ one: ItemIdentifier?, _ other: ItemIdentifier?) -> Bool {
            guard let one, let other else { return one == nil && other == nil }
            return ItemName.same(one.site, other.site) && ItemName.same(one.id, other.id)
        }
    }

    /// What few items have.
    private final class Rare: Sendable {
        let lock: ProviderLock?
        let symlinkTarget: [UInt8]?

        init(lock: ProviderLock?, symlinkTarget: [UInt8]?) {
            self.lock = lock
            self.symlinkTarget = symlinkTarget
        }
    }

    let context: Context
    private let id: String
    private let name: String
    private let version: String
    private let size: Int64
    private let created: Timestamp
    private let modified: Timestamp
    private let rare: Rare?
    /// When the item was stored, on the cache's clock.
    let fetchedAt: ContinuousClock.Instant
    private let kind: ProviderItem.Kind
    private let capabilities: Capabilities
    private let mode: UInt16?

    /// `item` as stored at `fetchedAt`, sharing `context` when it fits the item (the last
    /// context the cache used: a page's items come one after another).
    init(_ item: ProviderItem, fetchedAt: ContinuousClock.Instant, sharing context: Context?) {
        self.context = context.flatMap { $0.fits(item) ? $0 : nil } ?? Context(of: item)
        id = item.identifier.id
        name = item.name
        version = item.version
        size = item.size
        created = item.created
        modified = item.modified
        rare = item.lock == nil && item.symlinkTarget == nil ? nil : Rare(lock: item.lock, symlinkTarget: item.symlinkTarget)
        self.fetchedAt = fetchedAt
        kind = item.kind
        capabilities = item.capabilities
        mode = item.mode
    }

    /// The same item, stored at another time.
    init(_ other: CachedItem, fetchedAt: ContinuousClock.Instant) {
        context = other.context
        id = other.id
        name = other.name
        version = other.version
        size = other.size
        created = other.created
        modified = other.modified
        rare = other.rare
        self.fetchedAt = fetchedAt
        kind = other.kind
        capabilities = other.capabilities
        mode = other.mode
    }

    var identifier: ItemIdentifier { ItemIdentifier(site: context.site, id: id) }

    var item: ProviderItem {
        ProviderItem(identifier: identifier, parent: context.parent, name: name, kind: kind, size: size, created: created,
                     modified: modified, createdBy: context.createdBy, modifiedBy: context.modifiedBy, version: version,
                     capabilities: capabilities, lock: rare?.lock, mode: mode, symlinkTarget: rare?.symlinkTarget)
    }
}
