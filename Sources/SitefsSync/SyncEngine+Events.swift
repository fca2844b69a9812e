import SitefsAPI
import SitefsProvider

/// What the user did to a file's content, and items that are gone, as the core tells the
/// engine. Each change is recorded durably before the call returns (or refused with
/// `SyncError`, having logged why).
extension SyncEngine {
    /// A file was saved (its snapshot staged and fsynced): the save is journaled and queued,
    /// replacing an older save of the same file. Durable when this returns; close() must fail
    /// when it throws. `openAfter`: the file may stay open for writing (see `WriteBackDelays`).
    public func save(_ job: SaveJob, openAfter: Bool = false) throws(SyncError) {
        do {
            try uploader.enqueue(job, openAfter: openAfter)
        } catch {
            logger.error("cannot record the save of \(job.name) in the upload journal: \(error)")
            throw .journal
        }
    }

    /// The last writer of a file closed it: a save that waited because it was open goes now.
    public func fileClosed(_ identifier: ItemIdentifier) { uploader.fileClosed(identifier) }

    /// A modification time was set on a file: a save of it queued or being sent ends with
    /// this time (the server sets its own on upload). False when none is pending.
    public func setModificationTime(_ modified: Timestamp, of identifier: ItemIdentifier) -> Bool {
        uploader.applyModified(modified, to: identifier)
    }

    /// The item is gone (deleted on the server, removed here, or a new file that could not
    /// be opened): nothing more of it is sent, and the mount stops showing it as made or
    /// moved here. A removal queued for later stays queued.
    public func forget(_ identifier: ItemIdentifier) {
        namespace.removeCreated(identifier)
        namespace.setMoved(identifier, to: nil)
        uploader.cancel(identifier)
    }

    /// Makes a namespace change on the server at once, only after the renames queued before
    /// it reached the server, so the server sees changes in the order they were made.
    func changeOnServer<T>(_ operation: @autoclosure () -> String,
                           _ change: () throws(ProviderError) -> T) throws(SyncError) -> T {
        guard uploader.flushRenames(timeout: renamesWait) else {
            logger.error("\(operation()): renames made before it could not be sent to the server; try again when it is reachable")
            throw .renamesPending
        }
        do throws(ProviderError) {
            return try change()
        } catch {
            throw .server(error)
        }
    }
}
