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
        guard (0...ProviderItem.maximumSize).contains(item.size) else {
            throw .invalidResponse("item \(item.id) has an impossible size \(item.size)")
        }
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
    /// One that is not, or cannot be represented, is left out with the reason (`Page.refused`):
    /// a bad item must not hide its good neighbours (a site named `..` stopped the whole
    /// mount from starting). A malformed page as a whole, or a cursor that cannot be one,
    /// fails the call.
    static func page(_ page: ItemPage, of folder: ItemIdentifier?) throws(ProviderError) -> Page {
        var items: [ProviderItem] = []
        var refused: [String] = []
        items.reserveCapacity(page.items.count)
        for item in page.items {
            do throws(ProviderError) {
                let converted = try providerItem(item)
                if let folder {
                    guard converted.parent == folder else {
                        throw .invalidResponse("item \(item.id.prefix(80)) listed in \(folder) belongs to \(converted.parent?.description.prefix(80) ?? "no folder")")
                    }
                } else {
                    guard converted.kind == .site else { throw .invalidResponse("the site list holds a \(item.kind.rawValue)") }
                }
                items.append(converted)
            } catch {
                refused.append(error.description)
            }
        }
        if let next = page.nextCursor {
            guard !next.isEmpty, next.utf8.count <= maximumCursorLength else {
                throw .invalidResponse("unusable next_cursor (\(next.utf8.count) bytes)")
            }
        }
        return Page(items: items, next: page.nextCursor.map(PageToken.init), refused: refused)
    }

    /// Cursors are opaque, but one longer than this is no cursor: it would only cost memory
    /// (each is kept to notice a server repeating one).
    static let maximumCursorLength = 4096
}
