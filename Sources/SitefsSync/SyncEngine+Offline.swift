import SitefsAPI
import SitefsProvider

/// Changes of the folder tree that the server cannot take now (it is unreachable, or the
/// change is inside a folder made here that it does not have yet): recorded durably, shown
/// at once as the user left them, and sent in the order made once they can be
/// (`NamespaceOperation`). Online, the core makes these changes on the server at once, as
/// before; these are its way when it cannot.
extension SyncEngine {
    /// mkdir: the folder (a local identifier) exists here from now on and is made on the
    /// server when it can be; what is saved or made in it meanwhile goes into it there.
    public func madeFolder(_ folder: ProviderItem) throws(SyncError) {
        namespace.addCreated(folder)
        do {
            try uploader.enqueueOperation(NamespaceOperation(kind: .makeFolder, identifier: folder.identifier, name: folder.name,
                                                             parent: folder.parent, folders: folder.parent.flatMap(chain(of:))))
        } catch {
            namespace.removeCreated(folder.identifier)
            logger.error("cannot record mkdir \(folder.name) in the journal: \(error)")
            throw .journal
        }
    }

    /// A server file deleted, or a server folder removed, while the server cannot be reached:
    /// hidden from every listing from now on and removed there when it can be, unless
    /// someone changed it meanwhile (see `Uploader.attemptOperation`). The core then forgets
    /// it as after any delete.
    public func removedLater(_ item: ProviderItem) throws(SyncError) {
        let isFile = item.kind == .file
        let operation = NamespaceOperation(kind: isFile ? .deleteFile : .removeFolder, identifier: item.identifier, name: item.name,
                                           parent: item.parent, baseVersion: isFile ? item.version : nil)
        namespace.hide(item.identifier)  // first: a listing fetched meanwhile must not bring it back
        do {
            try uploader.enqueueOperation(operation)
        } catch {
            namespace.unhide(item.identifier)
            logger.error("cannot record the delete of \(item.name) in the journal: \(error)")
            throw .journal
        }
    }

    /// A folder made here is removed (empty): `.discarded` when its mkdir had not gone
    /// (nothing is sent), `.awaitCreate` when it has: wait for it and remove what it made.
    public func removingMadeFolder(_ folder: ItemIdentifier) -> Removal {
        guard uploader.dropMakeFolder(folder) else { return .awaitCreate }
        namespace.removeCreated(folder)
        return .discarded
    }

    /// A server item renamed or moved while the server cannot take it now: shown at once and
    /// sent with the renames, after the operations made before it. Nil for an item with no
    /// folder.
    public func renameLater(_ item: ProviderItem, to folder: ItemIdentifier, named name: String) throws(SyncError) -> ProviderItem? {
        try queueRename(item, to: folder, named: name)
    }

    /// A folder made here renamed or moved before its mkdir went: it is made there instead.
    /// `.awaitCreate` when the mkdir has gone: rename what it made.
    func moveMadeFolder(_ folder: ProviderItem, to parent: ItemIdentifier, named name: String) -> RenameResult {
        guard uploader.retargetMakeFolder(folder.identifier, name: name, parent: parent, folders: chain(of: parent)) else {
            return .awaitCreate(restored: namespace.created(folder.identifier))
        }
        var moved = folder
        moved.parent = parent
        moved.name = name
        namespace.addCreated(moved)
        return .moved(moved, becameDocument: false)
    }

    /// True while a removal of the item made here has not reached the server: a report of it
    /// (the change feed, a refreshed item) must not show it again.
    public func isRemovedHere(_ identifier: ItemIdentifier) -> Bool { namespace.isHidden(identifier) }

    /// Turns an operation's outcome into an event, with the namespace brought up to date first.
    func report(_ outcome: Uploader.OperationOutcome) -> SyncEvent? {
        let operation = outcome.operation
        switch outcome {
        case .madeFolder(_, let folder):
            // What was made or moved into it here is shown in the server folder from now on,
            // before the core hears that the local one is gone.
            namespace.reparent(from: operation.identifier, to: folder.identifier)
            namespace.removeCreated(operation.identifier)
            return .replaced(operation.identifier, by: namespace.view(folder))
        case .deleted:
            namespace.unhide(operation.identifier)
            return nil
        case .kept, .failed:
            guard operation.kind != .makeFolder else { return .failed(operation.identifier) }  // stays shown here
            namespace.unhide(operation.identifier)
            return .restored(operation.identifier, parent: operation.parent, name: operation.name)
        }
    }
}
