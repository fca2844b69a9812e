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
        /// The version to show instead of the entry's: an upload's own (see `UploadTag`).
        var version: String?
    }

    static func identifier(_ node: IdentityTable.Node, site: IdentityTable.Node) -> ItemIdentifier {
        ItemIdentifier(site: String(site), id: String(node))
    }

    /// What a resource's properties say, each parsed once (a listing has 100,000 of them).
    struct Facts {
        /// Nil when missing or not a size (which a file must have).
        var size: Int64?
        /// The last modification, in seconds; the epoch when the server gives none.
        var seconds: Int64
        /// Its tag, else its size and time (see `EntityTag`).
        var version: String
        /// The mode sitefs set (`urn:sitefs:mode`), when it reads as one.
        var mode: UInt16?
        /// A link's target as `urn:sitefs:symlink-target` carries it, when it decodes.
        var target: [UInt8]?
        /// Property text that was there but did not read as its format (for the log).
        var malformed: [String] = []

        init(_ properties: DAVProperties) {
            size = properties.contentLength.flatMap { Int64($0.trimmingASCIIWhitespace) }.flatMap {
                (0...ProviderItem.maximumSize).contains($0) ? $0 : nil
            }
            seconds = properties.lastModified.flatMap(HTTPDate.secondsSinceEpoch) ?? 0
            version = EntityTag.version(fromHeader: properties.etag)
                ?? EntityTag.fallbackVersion(size: properties.isCollection ? 0 : size ?? 0, modifiedSeconds: seconds)
            if let text = properties.mode {
                mode = SitefsDeadProperties.mode(from: text)
                if mode == nil { malformed.append("mode \(text.debugDescription.prefix(40))") }
            }
            if let text = properties.symlinkTarget {
                target = SitefsDeadProperties.symlinkTarget(from: text)
                if target == nil { malformed.append("symlink-target \(text.debugDescription.prefix(40))") }
            }
        }
    }

    /// `lock`: the lock shown on it (the backend reads it from `lockdiscovery`). A file
    /// `NAME.rclonelink` that can be a link (see `RcloneLinks`) is the symlink `NAME`; its
    /// target is known when the `symlink-target` property agrees with the file's length
    /// (another client rewriting the file leaves a stale property: it is not believed then).
    static func item(named name: String, _ properties: DAVProperties, _ facts: Facts,
                     at placement: Placement, lock: ProviderLock? = nil) throws(ProviderError) -> ProviderItem {
        if let violation = ItemName.violation(of: name) {
            throw .invalidResponse("an unusable name (\(violation)): \(name.debugDescription.prefix(80))")
        }
        // Directly under the mount URL, collections are sites and files are files of their own
        // (their own "site", so nothing moves into or out of one).
        let linkName = properties.isCollection || placement.parent == nil ? nil : RcloneLinks.linkName(ofFile: name, size: facts.size)
        let kind: ProviderItem.Kind = properties.isCollection ? (placement.parent == nil ? .site : .folder) : linkName == nil ? .file : .symlink
        var size: Int64 = 0
        if kind == .file || kind == .symlink {
            guard let known = facts.size else {
                throw .invalidResponse("\(name.debugDescription.prefix(80)) has no usable size: \((properties.contentLength ?? "none").prefix(40))")
            }
            size = known
        }
        let modified = shownModified(placement, seconds: facts.seconds)
        let capabilities: Capabilities = switch kind {
        case .site: [.read, .addChildren]
        case .folder: [.read, .write, .rename, .delete, .addChildren]
        case .file: fileCapabilities(placement)
        case .symlink: [.read, .rename, .delete]
        }
        let target = kind == .symlink ? facts.target.flatMap { Int64($0.count) == size ? $0 : nil } : nil
        return ProviderItem(identifier: identifier(placement.node, site: placement.site), parent: placement.parent, name: linkName ?? name,
                            kind: kind, size: size, created: modified, modified: modified, createdBy: "", modifiedBy: "",
                            version: placement.version ?? facts.version, capabilities: capabilities, lock: lock, mode: facts.mode,
                            symlinkTarget: target)
    }

    /// A file this mount just created, as the PUT's answer (dated `date`, in seconds) and
    /// what was sent describe it, with the upload's own version (see `UploadTag`).
    static func uploadedFile(named name: String, size: Int64, version: String, answeredAt date: Int64, at placement: Placement,
                             mode: UInt16?) -> ProviderItem {
        let modified = shownModified(placement, seconds: date)
        return ProviderItem(identifier: identifier(placement.node, site: placement.site), parent: placement.parent, name: name,
                            kind: .file, size: size, created: modified, modified: modified, createdBy: "", modifiedBy: "",
                            version: version, capabilities: fileCapabilities(placement), lock: nil, mode: mode, symlinkTarget: nil)
    }

    /// A file directly under the mount URL is read and written in place, never moved.
    private static func fileCapabilities(_ placement: Placement) -> Capabilities {
        placement.parent == nil ? [.read, .write] : [.read, .write, .rename, .delete]
    }

    /// The time kept here for the item, else the server's `seconds` (the epoch when they
    /// overflow microseconds).
    private static func shownModified(_ placement: Placement, seconds: Int64) -> Timestamp {
        let (microseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        return Timestamp(microsecondsSinceEpoch: placement.keptModified ?? (overflow ? 0 : microseconds))
    }
}
