import SitefsAPI
import SitefsProvider
import SitefsSync
import SystemPackage

/// chmod and chown.
///
/// Modes are the server's (`ProviderItem.mode`): a chmod goes to the engine like any other
/// change (now, or journaled while the server cannot take it, and for something made here,
/// with its create), so every mount of the server sees it. The kernel has checked who may
/// change them (`default_permissions`: the owner, or CAP_FOWNER); here only the grant is
/// checked: an item the grant does not let this user change keeps its mode (EPERM).
///
/// Ownership is the mount's: a document server keeps no owners, so every item shows the
/// mounting user's uid and gid, except what this mount keeps while it runs
/// (`LocalOwners`): an owner root gave with chown, and the maker of an item another user
/// made through `--allow-other`. The kernel lets only root give a file away (EPERM for
/// everyone else, before the request reaches the mount), so a chown that arrives from
/// anyone else changes nothing or is refused here too.
extension SitefsFilesystem {
    func changeOwner(of inode: InodeNumber, uid: UInt32?, gid: UInt32?, context: RequestContext) throws(Errno) {
        let noChange = UInt32.max  // chown's -1
        let current = localOwners.owner(of: inode) ?? LocalOwners.Owner(uid: configuration.uid, gid: configuration.gid)
        var owner = current
        if let uid, uid != noChange { owner.uid = uid }
        if let gid, gid != noChange { owner.gid = gid }
        guard owner != current else { return }
        guard context.uid == 0 else {
            logger.debug("chown of inode \(inode) by uid \(context.uid): only root gives files away")
            throw .notPermitted
        }
        localOwners.set(owner, of: inode)
    }

    /// An item made by another user than the mounting one (through `--allow-other`) is
    /// theirs on this mount.
    func recordMaker(of inode: InodeNumber, context: RequestContext) {
        guard context.uid != configuration.uid else { return }
        localOwners.set(LocalOwners.Owner(uid: context.uid, gid: context.gid), of: inode)
    }

    /// Sets the item's permission bits; returns the item as shown from now on.
    func changeMode(of item: ProviderItem, to requested: UInt32) throws(Errno) -> ProviderItem {
        let mode = UInt16(truncatingIfNeeded: requested) & ProviderItem.permissionBits
        if item.kind == .symlink { return item }  // Linux never changes a link's own mode
        // What is shown already (`rsync -a` and `cp -a` set every mode, a site's folder's too).
        let shown = UInt16(truncatingIfNeeded: AttributeMapping.mode(for: item, readOnlyMount: configuration.readOnly))
            & ProviderItem.permissionBits
        if shown == mode { return item }
        // A site's folder is the grant's, not the user's; a grant without write keeps modes.
        guard item.kind != .site, item.isWritable, !configuration.readOnly else { throw .notPermitted }
        let outcome: NamespaceOutcome
        do throws(SyncError) {
            outcome = try sync.apply(.setMode(item, mode: mode))
        } catch {
            throw errorNumber(for: error, "chmod \(item.name)", dropping: item.identifier)
        }
        var changed = item
        switch outcome {
        case .sent(let updated?), .queued(let updated?, _): changed = updated
        default: changed.mode = mode
        }
        // The server's answer (or the engine's overlay) has the mode; the copy of a file
        // edited here keeps its own size and time meanwhile (see `attributes(of:inode:)`).
        if changed.mode != mode {
            logger.warning("chmod \(item.name): the server kept \(changed.mode.map { String($0, radix: 8) } ?? "none"), not \(String(mode, radix: 8))")
        }
        cache.upsertIfKnown(sync.view(changed))
        localTimes.changed(item.identifier, now: Self.now())
        return cache.item(item.identifier) ?? changed
    }
}
