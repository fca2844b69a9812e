import SitefsAPI
import SitefsProvider

/// Server responses are checked before anything reaches the filesystem: a name that could
/// not be a file name (`/`, NUL, `..`, too long), a negative size or an item that does not
/// belong where it was listed is refused and reported, never shown as a file.
///
/// A lock is checked too (`problem(with:)`), but a lock that cannot be shown refuses
/// nothing else: the item stands without it, and the reason joins the page's (or feed
/// batch's) `refused` reports, which the mount logs.
enum ResponseValidation {
    /// Which lock this backend holds on which item (`HeldLocks.lockIDs`): an item's lock
    /// with that id is `heldHere`.
    typealias HeldLockIDs = [ItemIdentifier: String]

    static func providerItem(_ item: Item, held: HeldLockIDs = [:]) throws(ProviderError) -> ProviderItem {
        var notes: [String] = []
        return try providerItem(item, held: held, notes: &notes)
    }

    /// The item, with its lock unless the lock is unusable; then `notes` gets why.
    static func providerItem(_ item: Item, held: HeldLockIDs, notes: inout [String]) throws(ProviderError) -> ProviderItem {
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
        case .folder, .file, .symlink:
            guard let parent = item.parentID, !parent.isEmpty, parent != item.id else {
                throw .invalidResponse("\(item.kind.rawValue) \(item.id) has no parent")
            }
            kind = switch item.kind {
            case .folder: .folder
            case .symlink: .symlink
            default: .file
            }
        }
        var mode: UInt16?
        if let wire = item.mode {
            guard ItemMode.range.contains(wire) else { throw .invalidResponse("item \(item.id) has an impossible mode \(wire)") }
            mode = UInt16(wire)
        }
        var target: [UInt8]?
        if kind == .symlink {
            guard let wire = item.symlinkTarget, ProviderItem.isValidSymlinkTarget(Array(wire.utf8)) else {
                throw .invalidResponse("link \(item.id) has no usable target")
            }
            guard item.size == Int64(wire.utf8.count) else {
                throw .invalidResponse("link \(item.id) says its target has \(item.size) bytes, not \(wire.utf8.count)")
            }
            target = Array(wire.utf8)
        }
        let identifier = ItemIdentifier(site: item.siteID, id: item.id)
        var lock: ProviderLock?
        if let wire = item.lock {
            if let problem = kind != .file ? "a \(item.kind.rawValue) cannot be locked" : problem(with: wire) {
                notes.append("the lock on item \(item.id.prefix(80)) is left out: \(problem)")
            } else {
                lock = providerLock(wire, heldHere: held[identifier] == wire.id)
            }
        }
        return ProviderItem(
            identifier: identifier,
            parent: item.parentID.map { ItemIdentifier(site: item.siteID, id: $0) },
            name: item.name, kind: kind, size: item.size, created: item.createdAt, modified: item.modifiedAt,
            createdBy: item.createdBy, modifiedBy: item.modifiedBy, version: item.etag, capabilities: Capabilities(item.capabilities),
            lock: lock, mode: mode, symlinkTarget: target)
    }

    /// Longest lock id, holder, holder name, device or application accepted, in bytes (the
    /// server allows 200 for device and application, 200 for display names).
    static let maximumLockTextBytes = 256
    /// Lock times after this (the end of year 9999) are no times.
    static let latestLockTime = Timestamp(microsecondsSinceEpoch: 253_402_300_799_999_999)

    /// Why a server's lock cannot be shown, or nil when it can: texts bounded and free of
    /// control characters (they reach notifications and logs), an id and a holder, times
    /// from 1970 to 9999 and an expiry no earlier than the start.
    static func problem(with lock: ItemLock) -> String? {
        for (field, text) in [("id", lock.id), ("holder", lock.holder), ("holder_name", lock.holderName),
                              ("device", lock.device), ("application", lock.application)] {
            if text.utf8.count > maximumLockTextBytes { return "\(field) is longer than \(maximumLockTextBytes) bytes" }
            if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return "\(field) holds control characters"
            }
        }
        if lock.id.isEmpty || lock.holder.isEmpty { return "a lock without id or holder" }
        for time in [lock.createdAt, lock.expiresAt] where time.microseconds < 0 || time > latestLockTime {
            return "an impossible time \(time.rfc3339)"
        }
        if lock.expiresAt < lock.createdAt { return "it expires (\(lock.expiresAt.rfc3339)) before it began (\(lock.createdAt.rfc3339))" }
        return nil
    }

    /// A lock `problem(with:)` found nothing wrong with.
    static func providerLock(_ lock: ItemLock, heldHere: Bool) -> ProviderLock {
        ProviderLock(holder: lock.holder, holderName: lock.holderName.isEmpty ? lock.holder : lock.holderName, device: lock.device,
                     application: lock.application, since: lock.createdAt, expires: lock.expiresAt, heldHere: heldHere)
    }

    /// Items of a page must be children of the folder asked about (or sites, for the root).
    /// One that is not, or cannot be represented, is left out with the reason (`Page.refused`):
    /// a bad item must not hide its good neighbours (a site named `..` stopped the whole
    /// mount from starting). A malformed page as a whole, or a cursor that cannot be one,
    /// fails the call.
    static func page(_ page: ItemPage, of folder: ItemIdentifier?, held: HeldLockIDs = [:]) throws(ProviderError) -> Page {
        var items: [ProviderItem] = []
        var refused: [String] = []
        items.reserveCapacity(page.items.count)
        for item in page.items {
            do throws(ProviderError) {
                let converted = try providerItem(item, held: held, notes: &refused)
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
