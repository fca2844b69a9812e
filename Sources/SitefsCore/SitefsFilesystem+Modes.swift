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
/// Ownership is the mount's: every item shows the mounting user's uid and gid, as a
/// document server has no owners to keep. A chown that changes nothing succeeds; one to
/// another owner is EPERM, which the kernel already answers every caller but root.
extension SitefsFilesystem {
    func changeOwner(of item: ProviderItem, uid: UInt32?, gid: UInt32?) throws(Errno) {
        let noChange = UInt32.max  // chown's -1
        if let uid, uid != noChange, uid != configuration.uid {
            logger.debug("chown \(item.name) to uid \(uid): ownership is the mount's (uid \(configuration.uid))")
            throw .notPermitted
        }
        if let gid, gid != noChange, gid != configuration.gid {
            logger.debug("chgrp \(item.name) to gid \(gid): ownership is the mount's (gid \(configuration.gid))")
            throw .notPermitted
        }
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
