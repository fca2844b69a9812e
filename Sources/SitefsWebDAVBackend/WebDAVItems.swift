import SitefsAPI
import SitefsProvider
import SitefsWebDAV

/// A WebDAV resource as the File Provider model sees it, checked on the way: a name that
/// could not be a file name, a size that cannot be, a file where a site should be, are
/// refused with the reason (the listing leaves the item out and says why), never shown.
enum WebDAVItems {
    /// What identity and parent an entry is shown with.
    struct Placement {
        var node: IdentityTable.Node
        /// The site the item is in; the item's own node for a site.
        var site: IdentityTable.Node
        /// Nil for a site (a collection directly under the mount URL).
        var parent: ItemIdentifier?
        /// A modification time set here that the server could not keep (see `IdentityTable.keep`).
        var keptModified: Int64?
    }

    static func identifier(_ node: IdentityTable.Node, site: IdentityTable.Node) -> ItemIdentifier {
        ItemIdentifier(site: String(site), id: String(node))
    }

    /// The version a resource is shown with: its tag, else its size and time.
    static func version(of properties: DAVProperties, size: Int64, modifiedSeconds: Int64) -> (version: String, tagged: Bool) {
        if let tag = EntityTag.version(fromHeader: properties.etag) { return (tag, true) }
        return (EntityTag.fallbackVersion(size: size, modifiedSeconds: modifiedSeconds), false)
    }

    static func item(named name: String, _ properties: DAVProperties, at placement: Placement) throws(ProviderError) -> ProviderItem {
        if let violation = ItemName.violation(of: name) {
            throw .invalidResponse("an unusable name (\(violation)): \(name.debugDescription.prefix(80))")
        }
        // Directly under the mount URL, collections are sites and files are files of their own
        // (their own "site", so nothing moves into or out of one).
        let kind: ProviderItem.Kind = properties.isCollection ? (placement.parent == nil ? .site : .folder) : .file
        var size: Int64 = 0
        if kind == .file {
            guard let text = properties.contentLength, let parsed = Int64(text.trimmingASCIIWhitespace),
                  (0...ProviderItem.maximumSize).contains(parsed)
            else {
                throw .invalidResponse("\(name.debugDescription.prefix(80)) has no usable size: \((properties.contentLength ?? "none").prefix(40))")
            }
            size = parsed
        }
        // No date is no error (the item is still usable); it shows as the epoch.
        let seconds = properties.lastModified.flatMap(HTTPDate.secondsSinceEpoch) ?? 0
        let version = Self.version(of: properties, size: size, modifiedSeconds: seconds).version
        let modified = placement.keptModified.map(Timestamp.init(microsecondsSinceEpoch:))
            ?? Timestamp(microsecondsSinceEpoch: seconds.multipliedReportingOverflow(by: 1_000_000).overflow ? 0 : seconds * 1_000_000)
        // The root is the server's: sites and the files beside them are edited, never renamed,
        // deleted or added to from the mount (the core refuses creating there).
        let capabilities: Capabilities = switch kind {
        case .site: [.read, .addChildren]
        case .folder: [.read, .write, .rename, .delete, .addChildren]
        case .file: placement.parent == nil ? [.read, .write] : [.read, .write, .rename, .delete]
        }
        return ProviderItem(identifier: identifier(placement.node, site: placement.site), parent: placement.parent, name: name,
                            kind: kind, size: size, created: modified, modified: modified, createdBy: "", modifiedBy: "",
                            version: version, capabilities: capabilities)
    }
}
