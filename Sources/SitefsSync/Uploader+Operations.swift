import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// Namespace operations made offline (see `NamespaceOperation`): queued with the saves and
/// renames, durable when queued, sent one at a time in the order made.
extension Uploader {
    /// Records an operation (durable when this returns) and queues it after everything made
    /// before it. Returns it with its place in the order.
    @discardableResult
    public func enqueueOperation(_ operation: NamespaceOperation) throws -> NamespaceOperation {
        condition.lock()
        defer { condition.unlock() }
        var operation = operation
        // Under the lock, so the order in the journal is the order in the queue.
        operation.sequence = try journal.record(operation)
        lastOperationSequence = operation.sequence
        operations.append(operation)
        condition.broadcast()
        return operation
    }

    /// A folder made here is removed before its mkdir went: the mkdir is dropped (true).
    /// False when it has been sent (or is being sent): the caller waits for it and removes
    /// what it made.
    public func dropMakeFolder(_ folder: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        waitWhileBeingSentLocked(folder)
        guard let index = operations.firstIndex(where: { $0.kind == .makeFolder && $0.identifier == folder }) else { return false }
        let operation = operations.remove(at: index)
        try? journal.finished(operation)
        abandonedFolders.insert(folder)
        condition.broadcast()
        return true
    }

    /// A folder made here is renamed or moved before its mkdir went: it is made there under
    /// that name (true). False when it has been sent.
    public func retargetMakeFolder(_ folder: ItemIdentifier, name: String, parent: ItemIdentifier, folders: FolderChain?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        waitWhileBeingSentLocked(folder)
        guard let index = operations.firstIndex(where: { $0.kind == .makeFolder && $0.identifier == folder }) else { return false }
        operations[index].name = name
        operations[index].parent = parent
        operations[index].folders = folders
        journal.update(operations[index])
        return true
    }

    /// Waits (bounded) while the mkdir of `folder` is being tried: offline, that try ends in
    /// a moment with the mkdir put back in the queue, where it can still be changed; a mkdir
    /// that reaches the server ends done. Call with `condition` locked.
    private func waitWhileBeingSentLocked(_ folder: ItemIdentifier) {
        let deadline = Date().addingTimeInterval(Self.longestWaitForAnOperation)
        while operationInFlight?.identifier == folder {
            if !condition.wait(until: deadline) { return }
        }
    }

    /// How long a change of a folder made here waits for its mkdir being tried.
    static let longestWaitForAnOperation: TimeInterval = 10

    /// Where the folder a save, rename or operation goes into stands. Call with `condition`
    /// locked.
    func resolveFolderLocked(_ folder: ItemIdentifier) -> FolderResolution {
        guard folder.isLocal else { return .ready(folder) }
        if let made = madeFolders[folder] { return .ready(made) }
        if abandonedFolders.contains(folder) { return .abandoned }
        let pending = operationInFlight?.identifier == folder || operations.contains { $0.identifier == folder }
        return pending ? .waiting : .abandoned
    }

    /// True while an operation made at or before `sequence` has not reached the server.
    /// Call with `condition` locked.
    func operationPendingLocked(upTo sequence: Int64) -> Bool {
        if let sending = operationInFlight, sending.sequence <= sequence { return true }
        return operations.first.map { $0.sequence <= sequence } ?? false
    }

    /// The first queued operation, taken, when it may go: nothing in flight, and every rename
    /// made before it sent (those still waiting out the settle delay are made due, so they
    /// do not hold it up). Call with `condition` locked.
    func nextOperationLocked(now: ContinuousClock.Instant) -> NamespaceOperation? {
        guard operationInFlight == nil, var operation = operations.first, operation.notBefore <= now else { return nil }
        let before = renameOrder.filter { renames[$0]!.afterOperation < operation.sequence }
        if !before.isEmpty || renamesInFlight.values.contains(where: { $0.afterOperation < operation.sequence }) {
            for identifier in before where renames[identifier]!.notBefore > now { renames[identifier]!.notBefore = now }
            return nil
        }
        operations.removeFirst()
        if let parent = operation.parent, case .ready(let resolved) = resolveFolderLocked(parent), resolved != parent {
            operation.parent = resolved
            journal.update(operation)
        }
        operationInFlight = operation
        return operation
    }

    /// The rename of `identifier`, taken from the queue, with a folder made here it moves
    /// into resolved; nil while that folder is still to be made. One whose folder will never
    /// be made is dropped (reported like a refused rename). Call with `condition` locked.
    func takeRenameLocked(_ identifier: ItemIdentifier) -> RenameJob? {
        guard var rename = renames[identifier] else { return nil }
        switch resolveFolderLocked(rename.parent) {
        case .waiting:
            return nil
        case .ready(let folder):
            if folder != rename.parent {
                rename.parent = folder
                try? journal.recordRename(rename)
            }
        case .abandoned:
            break  // sent as it is: the server refuses the unknown folder and the rename is dropped
        }
        renameOrder.removeFirst()
        renames[identifier] = nil
        renamesInFlight[identifier] = rename
        return rename
    }

    /// Applies one operation on the server, retrying transient failures like uploads (so an
    /// operation made offline goes once the server is back). What it meets there:
    /// - mkdir, the name taken by a folder: the folder made here joins that one (its files go
    ///   into it; a file of the same name there meets the usual conflict rule); taken by a
    ///   file: made under a conflict name;
    /// - delete, the file changed on the server since the user saw it: not deleted (someone's
    ///   edit is not removed behind their back); already gone: done;
    /// - rmdir, the folder not empty on the server (someone added to it): not removed.
    ///
    /// While the mount is offline an operation is not held in flight, retrying: it goes back
    /// to the head of the queue (nil), where a folder made here can still be renamed or
    /// removed before it is sent, and is tried again after a wait, or at once when the server
    /// is back (`serverReachableAgain`).
    func attemptOperation(_ operation: NamespaceOperation) -> OperationOutcome? {
        let outcome: OperationOutcome
        do throws(Postponed) {
            switch operation.kind {
            case .makeFolder: outcome = try makeFolder(operation)
            case .deleteFile: outcome = try deleteFile(operation)
            case .removeFolder: outcome = try removeFolder(operation)
            }
        } catch {
            condition.lock()
            postponeLocked(operation)
            condition.unlock()
            return nil
        }
        condition.lock()
        finishOperation(outcome)
        condition.unlock()
        return outcome
    }

    /// Thrown when a request of an operation was not sent because the mount is offline.
    private struct Postponed: Error {}

    /// `retrying`, ending with `Postponed` when the mount is offline.
    private func sending<Value>(_ what: @autoclosure () -> String,
                                _ call: () throws(ProviderError) -> Value) throws(Postponed) -> Result<Value, ProviderError> {
        let result = retrying(what(), giveUp: { isStopping() }, stopWhenOffline: true, call)
        if case .failure(.offline) = result { throw Postponed() }
        return result
    }

    /// Puts an operation back at the head of the queue, due after a wait that doubles with
    /// each postponement (1 s to 30 s). Call with `condition` locked.
    private func postponeLocked(_ operation: NamespaceOperation) {
        var operation = operation
        operationInFlight = nil
        operation.postponements += 1
        operation.notBefore = clock.now + .seconds(min(30, 1 << min(operation.postponements - 1, 5)))
        operations.insert(operation, at: 0)
        condition.broadcast()
    }

    /// The server answers again: operations put back while offline are due now.
    public func serverReachableAgain() {
        condition.lock()
        defer { condition.unlock() }
        let now = clock.now
        for index in operations.indices where operations[index].notBefore > now {
            operations[index].notBefore = now
            operations[index].postponements = 0
        }
        condition.broadcast()
    }

    private func makeFolder(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        guard var parent = operation.parent, !parent.isLocal else {
            logger.error("mkdir \(operation.name): the folder it was made in never reached the server")
            return .failed(operation, .notFound)
        }
        var name = operation.name
        var remade = false
        for _ in 0..<3 {
            let result = try sending("mkdir \(name)") { () throws(ProviderError) -> ProviderItem in
                try backend.createFolder(named: name, in: parent)
            }
            switch result {
            case .failure(.notFound) where !remade && chain(operation.folders, leadsTo: parent) != nil:
                // Its folder was deleted on the server meanwhile: made again, this one in it.
                remade = true
                switch remakeFolders(chain(operation.folders, leadsTo: parent)!, for: operation.name, giveUp: { self.isStopping() }) {
                case .success(let folders): parent = folders.folder
                case .failure(let error):
                    logger.error("mkdir \(name) not applied: \(error)")
                    return .failed(operation, error)
                }
            case .success(let folder):
                logger.info("made folder \(folder.name) (made offline)")
                return .madeFolder(operation, folder)
            case .failure(.nameTaken) where name == operation.name:
                let existing = try serverItem(named: name, in: parent)
                if let existing, existing.kind != .file {
                    logger.notice("\(name) was made on the server meanwhile; what was made in it here goes into it")
                    return .madeFolder(operation, existing)
                }
                name = ConflictName.make(for: operation.name, user: userName, at: Date())
                logger.warning("\(operation.name) exists on the server as a file; the folder made here is \(name)")
            case .failure(let error):
                logger.error("mkdir \(name) not applied: \(error)")
                return .failed(operation, error)
            }
        }
        return .failed(operation, .nameTaken(name))
    }

    private func deleteFile(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        var result = try sending("delete of \(operation.name)") { () throws(ProviderError) in
            try backend.delete(operation.identifier, baseVersion: operation.baseVersion)
        }
        if case .failure(.versionMismatch(let current?)) = result, isOwnUpload(current.version, of: operation.identifier) {
            // The newer version is this mount's own save, whose upload was on its way when
            // the file was deleted here: no one else's edit, so the delete goes.
            result = try sending("delete of \(operation.name)") { () throws(ProviderError) in
                try backend.delete(operation.identifier, baseVersion: current.version)
            }
        }
        switch result {
        case .success, .failure(.notFound):
            logger.info("deleted \(operation.name) (deleted offline)")
            return .deleted(operation)
        case .failure(.versionMismatch):
            logger.warning("\(operation.name) was changed on the server after it was deleted here; the server's version is kept")
            return .kept(operation, reason: "changed on the server after it was deleted here; not deleted")
        case .failure(let error):
            logger.error("delete of \(operation.name) not applied: \(error)")
            return .failed(operation, error)
        }
    }

    /// True when `version` of the item is what this mount's own last upload of it produced,
    /// once no upload of it is in flight (waited for up to `longestWaitForAnOperation`: its
    /// answer may be on its way).
    private func isOwnUpload(_ version: String, of identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(Self.longestWaitForAnOperation)
        while inFlight[identifier] != nil || reporting[identifier] != nil {
            if !condition.wait(until: deadline) { break }
        }
        return lastUploaded[identifier]?.result == version
    }

    private func removeFolder(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        let listed = try sending("rmdir \(operation.name)") { () throws(ProviderError) -> Page in
            try backend.children(of: operation.identifier, after: nil, limit: 1)
        }
        switch listed {
        case .success(let page) where !page.items.isEmpty:
            logger.warning("\(operation.name) has files on the server that were added after it was removed here; it is kept")
            return .kept(operation, reason: "files were added to it on the server after it was removed here; not removed")
        case .success, .failure(.notFound):
            break
        case .failure(let error):
            logger.error("rmdir \(operation.name) not applied: \(error)")
            return .failed(operation, error)
        }
        let result = try sending("rmdir \(operation.name)") { () throws(ProviderError) in
            try backend.delete(operation.identifier, baseVersion: nil)
        }
        switch result {
        case .success, .failure(.notFound):
            logger.info("removed folder \(operation.name) (removed offline)")
            return .deleted(operation)
        case .failure(let error):
            logger.error("rmdir \(operation.name) not applied: \(error)")
            return .failed(operation, error)
        }
    }

    /// The server's item named `name` in `parent`, if any (one listing, transient failures
    /// retried, bounded like every listing).
    private func serverItem(named name: String, in parent: ItemIdentifier) throws(Postponed) -> ProviderItem? {
        var token: PageToken?
        var pages = 0
        repeat {
            guard case .success(let page) = try sending("list for \(name)", { () throws(ProviderError) -> Page in
                try backend.children(of: parent, after: token, limit: 500)
            }) else { return nil }
            if let item = page.items.first(where: { ItemName.same($0.name, name) }) { return item }
            token = page.next
            pages += 1
        } while token != nil && pages < 2_000
        return nil
    }

    /// Bookkeeping once an operation is over. Call with `condition` locked. A folder made
    /// here becomes its server folder for everything still to go into it.
    private func finishOperation(_ outcome: OperationOutcome) {
        let operation = outcome.operation
        operationInFlight = nil
        reporting[operation.identifier, default: 0] += 1
        var made: ItemIdentifier?
        switch outcome {
        case .madeFolder(_, let folder):
            made = folder.identifier
            madeFolders[operation.identifier] = folder.identifier
            retargetLocked(from: operation.identifier, to: folder.identifier)
        case .deleted:
            break
        case .kept(_, let reason):
            operationsNotApplied.append(Status.Failure(name: operation.name, reason: reason))
        case .failed(_, let error):
            operationsNotApplied.append(Status.Failure(name: operation.name, reason: error.description))
            if operation.kind == .makeFolder { abandonedFolders.insert(operation.identifier) }
        }
        do {
            try journal.finished(operation, madeFolder: made)
        } catch {
            // Replayed at the next mount: a mkdir then joins the folder it made, a delete finds it gone.
            logger.error("journal update failed after \(operation.kind.rawValue) \(operation.name): \(error)")
        }
        condition.broadcast()
    }

    /// Everything still aimed at the local folder `local` now goes to the server folder
    /// `folder`: queued and failed saves, renames, and operations. Call with `condition` locked.
    private func retargetLocked(from local: ItemIdentifier, to folder: ItemIdentifier) {
        for identifier in Array(queued.keys) where queued[identifier]!.parent == local {
            queued[identifier]!.parent = folder
            journal.retarget(queued[identifier]!)
        }
        for identifier in Array(failures.keys) where failures[identifier]!.0.parent == local {
            failures[identifier]!.0.parent = folder
            journal.retarget(failures[identifier]!.0)
        }
        for identifier in Array(renames.keys) where renames[identifier]!.parent == local {
            renames[identifier]!.parent = folder
            try? journal.recordRename(renames[identifier]!)
        }
        for index in operations.indices where operations[index].parent == local {
            operations[index].parent = folder
            journal.update(operations[index])
        }
    }
}

extension Uploader {
    /// Operations not on the server yet, in order (the mount's view shows them done).
    public var pendingOperations: [NamespaceOperation] {
        condition.lock()
        defer { condition.unlock() }
        return (operationInFlight.map { [$0] } ?? []) + operations
    }
}
