import SitefsAPI
import SitefsProvider

/// Server responses are checked before anything reaches the filesystem: a name that could
/// not be a file name (`/`, NUL, `..`, too long), a negative size or an item that does not
/// belong where it was listed is refused and reported, never shown as a file.
enum ResponseValidation {
    static func providerItem(_ item: Item) throws(ProviderError) -> ProviderItem {
        if let violation = ItemName.violation(of: item.name) {
            throw .invalidResponse("item \(item.id) has an unusable name (\(violation)): \(item.name.debugDescription.prefix(80))")
        }
        guard !item.id.isEmpty, !item.siteID.isEmpty else { throw .invalidResponse("item without id or site_id") }
        for id in [item.id, item.siteID, item.parentID ?? ""] where id.hasPrefix(ItemIdentifier.localPrefix) {
            throw .invalidResponse("item id \(id.prefix(80)) uses the prefix reserved for files not uploaded yet")
        }
        guard item.size >= 0 else { throw .invalidResponse("item \(item.id) has a negative size \(item.size)") }
        let kind: ProviderItem.Kind
        switch item.kind {
        case .site:
            guard item.parentID == nil, item.id == item.siteID else { throw .invalidResponse("site \(item.id) has a parent") }
            kind = .site
        case .folder, .file:
            guard let parent = item.parentID, !parent.isEmpty, parent != item.id else {
                throw .invalidResponse("\(item.kind.rawValue) \(item.id) has no parent")
            }
            kind = item.kind == .folder ? .folder : .file
        }
        return ProviderItem(
            identifier: ItemIdentifier(site: item.siteID, id: item.id),
            parent: item.parentID.map { ItemIdentifier(site: item.siteID, id: $0) },
            name: item.name, kind: kind, size: item.size, created: item.createdAt, modified: item.modifiedAt,
            createdBy: item.createdBy, modifiedBy: item.modifiedBy, version: item.etag, capabilities: Capabilities(item.capabilities))
    }

    /// Items of a page must be children of the folder asked about (or sites, for the root).
    static func page(_ page: ItemPage, of folder: ItemIdentifier?) throws(ProviderError) -> Page {
        var items: [ProviderItem] = []
        items.reserveCapacity(page.items.count)
        for item in page.items {
            let converted = try providerItem(item)
            if let folder {
                guard converted.parent == folder else {
                    throw .invalidResponse("item \(item.id) listed in \(folder) belongs to \(converted.parent?.description ?? "no folder")")
                }
            } else {
                guard converted.kind == .site else { throw .invalidResponse("the site list holds a \(item.kind.rawValue)") }
            }
            items.append(converted)
        }
        if let next = page.nextCursor, next.isEmpty { throw .invalidResponse("empty next_cursor") }
        return Page(items: items, next: page.nextCursor.map(PageToken.init))
    }
}
