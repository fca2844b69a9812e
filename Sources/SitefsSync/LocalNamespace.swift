import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsConcurrency

/// What the mount shows that the server does not have yet: files and folders created here
/// and not on the server (local identifiers), renames of server items still waiting in the
/// uploader's queue, and server items removed here whose delete is still queued. Server items and listings pass through `view` on their
/// way into the cache, so a listing fetched again or a change-feed update does not undo
/// what the user just did.
final class LocalNamespace: Sendable {
    private struct State {
        /// Files and folders made here, not on the server yet.
        private(set) var created: [ItemIdentifier: ProviderItem] = [:]
        /// `created` by folder and name (compared as bytes): what a lookup of a name and a
        /// listing ask, at a cost that does not grow with the files waiting to be sent (a
        /// loop of new files while the server is away, or faster than their uploads).
        /// Where two have one name, the later.
        private(set) var createdIn: [ItemIdentifier: [NameKey: ItemIdentifier]] = [:]
        /// Server files shown somewhere else than where the server has them.
        var moved: [ItemIdentifier: (parent: ItemIdentifier, name: String)] = [:]
        /// Server items removed here whose delete has not reached the server yet: no listing
        /// shows them again meanwhile.
        var removed: Set<ItemIdentifier> = []
        /// Server items whose chmod is journaled and not sent yet: shown with this mode.
        var modes: [ItemIdentifier: UInt16] = [:]

        mutating func addCreated(_ item: ProviderItem) {
            removeCreated(item.identifier)
            created[item.identifier] = item
            if let parent = item.parent { createdIn[parent, default: [:]][NameKey(item.name)] = item.identifier }
        }

        @discardableResult
        mutating func removeCreated(_ identifier: ItemIdentifier) -> ProviderItem? {
            guard let item = created.removeValue(forKey: identifier) else { return nil }
            if let parent = item.parent, createdIn[parent]?[NameKey(item.name)] == identifier {
                createdIn[parent]![NameKey(item.name)] = nil
                if createdIn[parent]!.isEmpty { createdIn[parent] = nil }
            }
            return item
        }

        mutating func setCreatedMode(_ identifier: ItemIdentifier, to mode: UInt16) {
            created[identifier]?.mode = mode
        }

        /// The files made here in `folder`.
        func created(in folder: ItemIdentifier) -> [ProviderItem] {
            (createdIn[folder]?.values).map { $0.compactMap { created[$0] } } ?? []
        }
    }

    /// Lock order: last of the ranked locks (after the uploader's); nothing is taken under it.
    private let state = OrderedMutex(State(), rank: .namespace)

    // MARK: Files created here

    func addCreated(_ item: ProviderItem) { state.withLock { $0.addCreated(item) } }

    func removeCreated(_ identifier: ItemIdentifier) { _ = state.withLock { $0.removeCreated(identifier) } }

    func created(_ identifier: ItemIdentifier) -> ProviderItem? { state.withLock { $0.created[identifier] } }

    /// The file created here that the mount shows as `name` in `folder`.
    func created(named name: String, in folder: ItemIdentifier) -> ProviderItem? {
        state.withLock { state in state.createdIn[folder]?[NameKey(name)].flatMap { state.created[$0] } }
    }

    /// A folder made here is on the server now (`folder`): what was made or moved into it
    /// here is shown there.
    func reparent(from local: ItemIdentifier, to folder: ItemIdentifier) {
        state.withLock { state in
            for var item in state.created(in: local) {
                item.parent = folder
                state.addCreated(item)
            }
            for (identifier, position) in state.moved where position.parent == local {
                state.moved[identifier] = (folder, position.name)
            }
        }
    }

    // MARK: Removals not applied yet

    func hide(_ identifier: ItemIdentifier) { _ = state.withLock { $0.removed.insert(identifier) } }

    func unhide(_ identifier: ItemIdentifier) { _ = state.withLock { $0.removed.remove(identifier) } }

    func isHidden(_ identifier: ItemIdentifier) -> Bool { state.withLock { $0.removed.contains(identifier) } }

    // MARK: Renames not applied yet

    /// Shows a server file at `parent`/`name`; nil shows it where the server has it again.
    func setMoved(_ identifier: ItemIdentifier, to position: (parent: ItemIdentifier, name: String)?) {
        state.withLock { $0.moved[identifier] = position }
    }

    func isMoved(_ identifier: ItemIdentifier) -> Bool { state.withLock { $0.moved[identifier] != nil } }

    // MARK: Modes not sent yet

    /// Shows a server item with `mode` until its chmod is settled; nil shows the server's.
    func setMode(_ identifier: ItemIdentifier, to mode: UInt16?) { state.withLock { $0.modes[identifier] = mode } }

    /// A chmod of something made here: it is made with it.
    func setCreatedMode(_ identifier: ItemIdentifier, to mode: UInt16) {
        state.withLock { $0.setCreatedMode(identifier, to: mode) }
    }

    // MARK: Views

    /// True when a listing of `folder` from the server would not show what the mount shows.
    func touches(_ folder: ItemIdentifier) -> Bool {
        state.withLock { state in
            state.createdIn[folder] != nil || !state.moved.isEmpty || !state.removed.isEmpty
        }
    }

    /// A server item as the mount shows it.
    func view(_ item: ProviderItem) -> ProviderItem {
        let (position, mode) = state.withLock { ($0.moved[item.identifier], $0.modes[item.identifier]) }
        var shown = item
        if let mode { shown.mode = mode }
        guard let position else { return shown }
        shown.parent = position.parent
        shown.name = position.name
        return shown
    }

    /// A page of a server listing as the mount shows it: files moved away are left out,
    /// renamed ones carry their new name. (Items moved or created here are added by
    /// `complete`, once the whole listing is known.)
    func view(page items: [ProviderItem], of folder: ItemIdentifier?) -> [ProviderItem] {
        guard let folder else { return items }
        return state.withLock { state in
            guard !state.moved.isEmpty || !state.removed.isEmpty || !state.modes.isEmpty else { return items }
            return items.compactMap { item in
                if state.removed.contains(item.identifier) { return nil }
                var shown = item
                if let mode = state.modes[item.identifier] { shown.mode = mode }
                guard let position = state.moved[item.identifier] else { return shown }
                guard position.parent == folder else { return nil }
                shown.name = position.name
                return shown
            }
        }
    }

    /// Adds to a folder's complete listing the files moved into it or created in it here.
    func complete(names: [String], identifiers: [ItemIdentifier], of folder: ItemIdentifier) -> ([String], [ItemIdentifier]) {
        state.withLock { state in
            var names = names, identifiers = identifiers
            var present = Set(identifiers)
            for (identifier, position) in state.moved where position.parent == folder && !present.contains(identifier) {
                names.append(position.name)
                identifiers.append(identifier)
                present.insert(identifier)
            }
            for item in state.created(in: folder) where !present.contains(item.identifier) {
                // A new file hides a server item of its name: that is either its own create,
                // made before a restart whose answer never came (the upload resolves it), or
                // someone else's file, which the upload then keeps (saving this one under a
                // conflict name). Either way one name, one file.
                if let index = names.firstIndex(where: { ItemName.same($0, item.name) }) {
                    names.remove(at: index)
                    identifiers.remove(at: index)
                }
                names.append(item.name)
                identifiers.append(item.identifier)
            }
            return (names, identifiers)
        }
    }
}

/// Files programs create only for themselves: lock files, swap files, probes. They work on
/// the mount like any file (other programs see them), but never go to the server.
enum LocalOnlyNames {
    static func matches(_ name: String) -> Bool {
        if name.hasPrefix(".~lock.") && name.hasSuffix("#") { return true }  // LibreOffice
        if name == "4913" { return true }  // vim's probe for whether it may create files here
        if name.hasPrefix("~$") { return true }  // Microsoft Office owner files
        // vim swap files: .NAME.swp, .swo, ... .swa
        if name.hasPrefix("."), name.count > 4 {
            let suffix = name.suffix(4)
            if suffix.hasPrefix(".sw"), let last = suffix.last, ("a"..."p").contains(last) { return true }
        }
        return false
    }
}
