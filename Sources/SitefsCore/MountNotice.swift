/// Something a user of the mount should learn without running `sitefs status`: the daemon
/// turns it into a desktop notification (the log has its own line either way).
public enum MountNotice: Sendable, Equatable {
    /// A save could not become the file's next version (the server's copy had changed
    /// since it was opened): it was kept beside it as `copyName`. `path` is the file's
    /// place in the mount ("Site/Folder/file"). `lockedBy`: the person whose lock for
    /// editing refused the save (they hold the original now), nil for a plain conflict.
    case conflict(path: String, copyName: String, lockedBy: String? = nil)
    /// A document someone here ran into the lock of (LibreOffice opened it read-only) is
    /// free: `formerHolder` closed it (or their lock ended), and it can be edited now.
    case documentFree(path: String, formerHolder: String)
    /// Folders deleted on the server were made again there because `file` was saved into
    /// them here (edits win over deletes). `path` is the deepest one's place in the mount.
    case foldersRemade(path: String, file: String)
    /// The server refused a save for good (`reason`); the edit was saved as `savedAs`
    /// ("Site/Folder/NAME (rescued ...).EXT") instead. `path` is the file's place.
    case rescued(path: String, savedAs: String, reason: String)
    /// The server no longer accepts the mount's sign-in: nothing more reaches it until
    /// `sitefs login` (saves wait in the journal).
    case signInRequired
    /// The upload journal on this computer cannot be written (`reason`, e.g. the disk is
    /// full): new saves fail until it can, and what waits to be recorded is kept.
    case journalUnwritable(reason: String)
}
