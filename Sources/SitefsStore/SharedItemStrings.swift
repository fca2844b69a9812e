import SitefsAPI
import SitefsProvider

/// Makes items of one server answer share the storage of the strings they have in common:
/// a page of a listing decodes its folder's id, its site's id and its authors afresh for
/// every item, and each copy of a string over 15 bytes has storage of its own (on
/// sitefs-server, ids of 20-40 bytes: some 60 bytes of heap a copy).
///
/// A value is shared only with a recent value of the same bytes (`ItemName.same`: never
/// with a canonically equivalent one), so what an item says is unchanged. Strings of up
/// to 15 bytes are kept inside the `String` itself and are left as they are.
public struct SharedItemStrings {
    /// The last values shared, newest last. Few: a page's items share a folder, a site and
    /// an author or two.
    private var recent: [String] = []
    private static let remembered = 4
    /// The longest string a `String` holds without storage of its own (64-bit platforms).
    private static let longestInline = 15

    public init() {}

    /// `items` with their site, parent and author strings shared among them.
    public static func sharing(_ items: [ProviderItem]) -> [ProviderItem] {
        var strings = SharedItemStrings()
        return items.map { strings.shared($0) }
    }

    public mutating func shared(_ item: ProviderItem) -> ProviderItem {
        var item = item
        let site = shared(item.identifier.site)
        item.identifier = ItemIdentifier(site: site, id: item.identifier.id)
        if let parent = item.parent {
            item.parent = ItemIdentifier(site: shared(parent.site), id: shared(parent.id))
        }
        item.createdBy = shared(item.createdBy)
        item.modifiedBy = shared(item.modifiedBy)
        return item
    }

    private mutating func shared(_ value: String) -> String {
        guard value.utf8.count > Self.longestInline else { return value }
        if let known = recent.last(where: { ItemName.same($0, value) }) { return known }
        if recent.count == Self.remembered { recent.removeFirst() }
        recent.append(value)
        return value
    }
}
