import SitefsAPI
import SitefsProvider

/// chmod and symlink, decided by the same now-or-later rule as every namespace change
/// ("Now or later" at `SyncEngine`): sent at once while the server can take them, else
/// journaled (`NamespaceOperation.setMode`, `.makeSymlink`), shown at once and replayed in
/// the order made.
extension SyncEngine {
    /// A chmod. Something made here is made with its mode: a new file's save carries it
    /// (`SaveJob.mode`), a folder or link made offline gets a chmod queued after its make
    /// (applied to what the make made). A server item's mode is set now, or journaled and
    /// shown until it is sent.
    func setMode(of item: ProviderItem, to mode: UInt16) throws(SyncError) -> NamespaceOutcome {
        var shown = item
        shown.mode = mode
        if item.identifier.isLocal {
            namespace.setCreatedMode(item.identifier, to: mode)
            if item.kind == .file {
                uploader.applyMode(mode, to: item.identifier)
                return .queued(shown)
            }
        } else if sendsNow(into: nil) {
            do throws(ProviderError) {
                return .sent(namespace.view(try backend.update(item.identifier, ItemChanges(mode: mode), baseVersion: nil)))
            } catch where error.isUnreachable {
                // Lost in transit: sent again later (setting a mode twice changes nothing).
            } catch {
                throw .server(error)
            }
        }
        if !item.identifier.isLocal { namespace.setMode(item.identifier, to: mode) }
        do {
            try uploader.enqueueOperation(NamespaceOperation(kind: .setMode, identifier: item.identifier, name: item.name,
                                                             parent: item.parent, mode: mode))
        } catch {
            if !item.identifier.isLocal { namespace.setMode(item.identifier, to: nil) }
            logger.error("cannot record the chmod of \(item.name) in the journal: \(error)")
            throw .journal
        }
        logger.info("chmod \(item.name): shown here, on the server when it can take it")
        return .queued(shown)
    }

    /// A symbolic link: made on the server now, or made here and journaled like a folder
    /// (a local item of kind `.symlink` carrying its target until its make reaches the server).
    func makeSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(SyncError) -> NamespaceOutcome {
        if sendsNow(into: parent) {
            do throws(ProviderError) {
                return .sent(try backend.createSymlink(named: name, in: parent, target: target))
            } catch where error.isUnreachable {
                // Lost in transit: made later (a replay that meets this link joins it).
            } catch {
                throw .server(error)
            }
        }
        let now = Timestamp.now()
        let link = ProviderItem(identifier: .local(in: parent.site), parent: parent, name: name, kind: .symlink,
                                size: Int64(target.count), created: now, modified: now, createdBy: userName, modifiedBy: userName,
                                version: "", capabilities: ProviderItem.localLinkCapabilities, symlinkTarget: target)
        namespace.addCreated(link)
        do {
            try uploader.enqueueOperation(NamespaceOperation(kind: .makeSymlink, identifier: link.identifier, name: name,
                                                             parent: parent, folders: chain(of: parent), target: target))
        } catch {
            namespace.removeCreated(link.identifier)
            logger.error("cannot record symlink \(name) in the journal: \(error)")
            throw .journal
        }
        logger.info("symlink \(name): made here, sent to the server when it can take it")
        return .queued(link)
    }
}

extension ProviderItem {
    /// What a link made on the mount may do before the server has it.
    public static let localLinkCapabilities: Capabilities = [.read, .rename, .delete]
}
