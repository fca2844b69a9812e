import Foundation
import SitefsAPI
import SitefsProvider
import SitefsSync
import SystemPackage

/// Locks for editing, as the mount takes and shows them (see `EditingLockKeeper`,
/// `LockFileBackend`):
/// - LibreOffice making its lock file `.~lock.NAME#` beside a server document takes the
///   server's lock on NAME first. Someone else holding it: the create fails with EEXIST and
///   their lock file (shown by `LockFileBackend`) is there to read, so LibreOffice opens the
///   document read-only and names them. Offline, or on a server without locks: the lock
///   file is made as before, with no lock (it stays on this machine either way).
/// - A server document opened for writing is locked in the background until its last
///   writer closes (unless `lockWriters` is off).
/// - The lock file removed, the document's lock is released.
extension SitefsFilesystem {
    /// How long LibreOffice's create of its lock file waits for the server's answer.
    static let lockFileWait: Duration = .seconds(30)

    /// Before the lock file `fileName` is made in `folder`: the server's lock on its document,
    /// if that is a server file here. Throws EEXIST when someone else holds it.
    func lockDocument(forLockFile fileName: String, in folder: ProviderItem) throws(Errno) {
        guard let document = lockFileDocument(fileName, in: folder.identifier) else { return }
        switch editingLocks.acquire(document, for: .lockFile, application: "LibreOffice", wait: Self.lockFileWait) {
        case .taken, .notTaken:
            return
        case .heldElsewhere(let lock):
            logger.info("\(displayPath(of: document.identifier)) is locked for editing by \(lock?.description ?? "someone else"); shown as read-only here")
            showLockFile(of: document)
            seenLocks.watch(document.identifier)
            throw .fileExists
        }
    }

    /// After the lock file `fileName` in `folder` was removed (or renamed away): its
    /// document's lock goes.
    /// Only the listing is read: releasing needs the document's identifier, not the server.
    func lockFileRemoved(_ fileName: String, in folder: ItemIdentifier?) {
        guard let folder, let identifier = lockFileDocumentIdentifier(fileName, in: folder) else { return }
        editingLocks.release(identifier, for: .lockFile)
    }

    /// A server file opened for writing: locked for as long as a writer has it open.
    func writerOpened(_ item: ProviderItem, context: RequestContext) {
        guard configuration.lockWriters, item.kind == .file, !item.identifier.isLocal, item.identifier.lockedDocument == nil,
              !SyncEngine.keepsLocal(item.name) else { return }
        editingLocks.acquireInBackground(item, for: .writer, application: Self.programName(context.pid) ?? "")
    }

    /// A writer of `identifier` closed it.
    func writerClosed(_ identifier: ItemIdentifier) {
        guard !identifier.isLocal else { return }
        editingLocks.release(identifier, for: .writer)
    }

    /// The server document a lock file in `folder` stands beside, nil when the name is no
    /// lock file's or its document is not a server file here.
    private func lockFileDocument(_ fileName: String, in folder: ItemIdentifier) -> ProviderItem? {
        guard let identifier = lockFileDocumentIdentifier(fileName, in: folder),
              let document = try? currentItem(identifier), document.kind == .file else { return nil }
        return document
    }

    /// The same, as the folder's listing names it.
    private func lockFileDocumentIdentifier(_ fileName: String, in folder: ItemIdentifier) -> ItemIdentifier? {
        guard let documentName = OfficeLockFile.document(of: fileName),
              let identifier = try? listing(of: folder).identifier(named: documentName),
              !identifier.isLocal, identifier.lockedDocument == nil else { return nil }
        return identifier
    }

    /// Makes the mount show the holder's lock file beside `document` now (the listing may
    /// predate the lock), and the kernel forget that it had none.
    private func showLockFile(of document: ProviderItem) {
        let read = cache.beginRead()
        defer { cache.endRead(read) }
        guard let lockFile = try? backend.item(.lockFile(of: document.identifier)) else { return }
        _ = cache.upsert(lockFile, asOf: read)
        invalidateEntry(in: lockFile.parent, named: lockFile.name)
    }

    /// A lock someone here ran into was released: they hear the document is free.
    func documentFreed(_ entry: SeenLocks.Entry) {
        logger.info("\(displayPath(of: entry.document)) is no longer locked by \(entry.lock.holderName)")
        onNotice?(.documentFree(path: displayPath(of: entry.document), formerHolder: entry.lock.holderName))
    }

    /// `user.sitefs.lock`: who holds the item's lock and since when ("Anna Berger on
    /// site-laptop since 2026-11-27T10:14:00Z", "this mount since ..."); nil when none is known.
    func lockDescription(of identifier: ItemIdentifier) -> String? {
        if let held = editingLocks.holds(identifier) { return "this mount since \(held.since.rfc3339)" }
        return seenLocks.lock(of: identifier)?.lock.description
    }

    /// The program of a process (its `comm`), for the locks it causes.
    static func programName(_ pid: Int32) -> String? {
        guard pid > 0, let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return nil }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? nil : String(trimmed.prefix(64))
    }
}
