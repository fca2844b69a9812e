import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// Namespace operations (see `NamespaceOperation`): queued with the saves and renames,
/// durable when queued, sent in the order made (deletes of files several at once: see
/// `OperationQueue`).
extension Uploader {
    /// Records an operation (durable when this returns) and queues it after everything made
    /// before it. Returns it with its place in the order.
    @discardableResult
    public func enqueueOperation(_ operation: NamespaceOperation) throws -> NamespaceOperation {
        condition.lock()
        defer { condition.unlock() }
        var operation = operation
        // Under the lock, so the order in the journal is the order in the queue.
        do {
            operation.sequence = try journal.record(operation)
            journalWrittenLocked()
        } catch {
            journalFailedLocked("\(operation.kind.rawValue) \(operation.name)", error, refused: true)
            throw error
        }
        // `rm -r`: the folder's deletes still queued go with it. Not while a rename waits: it
        // may wait for one of them (a name it frees), and the rmdir for it.
        if operation.kind == .removeFolder, renames.isIdle, operations.absorbDeletes(into: &operation) > 0 {
            logger.debug("rmdir \(operation.name): takes \(operation.absorbed.count) deletes along")
        }
        operations.append(operation, at: clock.now)
        // Nothing but a worker waits for an operation to be queued, and a worker is woken only
        // when none would look at the queue by the time it is due: a delete that waits for its
        // folder's next ones usually wakes none.
        if let due = operations.firstDue, workersNeedWaking(for: due) { condition.broadcast() }
        return operation
    }

    /// fsyncdir: the deletes and rmdirs recorded so far, committed without waiting for the
    /// disk (`UploadJournal.record(_:)`), are on it when this returns. Throws when the journal
    /// cannot be written (said in `sitefs status` like any failed journal write, until a
    /// write goes through). The journal serializes its own writes: the lock is taken only to
    /// report the outcome.
    public func syncJournal() throws {
        let flushed = Result { try journal.flush() }
        condition.lock()
        defer { condition.unlock() }
        switch flushed {
        case .success: journalWrittenLocked()
        case .failure(let error):
            journalFailedLocked("fsync of a folder", error, refused: true)
            throw error
        }
    }

    /// Sends the queued operations now (deletes stop waiting for more in their folders) and
    /// waits until none is left, so that a change made on the server at once goes after them.
    /// False on timeout (the caller queues its change instead).
    public func flushOperations(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        guard !operations.isIdle else { return true }
        operations.expediteDeletes()
        condition.broadcast()
        while !operations.isIdle {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// A folder made here is removed before its mkdir went: the mkdir is dropped (true).
    /// False when it has been sent (or is being sent): the caller waits for it and removes
    /// what it made.
    public func dropMakeFolder(_ folder: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        waitWhileBeingSentLocked(folder)
        guard let index = operations.queuedMakeFolder(folder) else { return false }
        let operation = operations.remove(at: index)
        write(.finishOperation(operation, madeFolder: nil))
        identities.abandonFolder(folder)
        condition.broadcast()
        return true
    }

    /// A folder made here is renamed or moved before its mkdir went: it is made there under
    /// that name (true). False when it has been sent.
    public func retargetMakeFolder(_ folder: ItemIdentifier, name: String, parent: ItemIdentifier, folders: FolderChain?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        waitWhileBeingSentLocked(folder)
        guard let index = operations.queuedMakeFolder(folder) else { return false }
        let changed = operations.update(at: index) { operation in
            operation.name = name
            operation.parent = parent
            operation.folders = folders
        }
        write(.updateOperation(changed))
        return true
    }

    /// Waits (bounded) while the mkdir of `folder` is being tried: offline, that try ends in
    /// a moment with the mkdir put back in the queue, where it can still be changed; a mkdir
    /// that reaches the server ends done. Call with `condition` locked.
    private func waitWhileBeingSentLocked(_ folder: ItemIdentifier) {
        let deadline = Date().addingTimeInterval(Self.longestWaitForAnOperation)
        while operations.isBeingSent(folder) {
            if !condition.wait(until: deadline) { return }
        }
    }

    /// How long a change of a folder made here waits for its mkdir being tried.
    static let longestWaitForAnOperation: TimeInterval = 10

    /// Where the folder a save, rename or operation goes into stands. Call with `condition`
    /// locked.
    func resolveFolderLocked(_ folder: ItemIdentifier) -> FolderResolution {
        identities.folder(folder, mkdirPending: operations.isPending(folder))
    }

    /// The first queued operation, taken, when it may go: nothing in flight, and every rename
    /// made before it sent (those still waiting out the settle delay are made due, so they
    /// do not hold it up). Call with `condition` locked.
    func nextOperationLocked(now: ContinuousClock.Instant) -> NamespaceOperation? {
        guard var operation = operations.next(at: now) else { return nil }
        if renames.madeBefore(operation: operation.sequence, makingDueAt: now) { return nil }
        if let parent = operation.parent, case .ready(let resolved) = resolveFolderLocked(parent), resolved != parent {
            operation.parent = resolved
            write(.updateOperation(operation))
        }
        operations.begin(operation)
        return operation
    }

    /// The next rename (`RenameQueue.next`), taken from the queue, with a folder made here it moves
    /// into resolved; nil while that folder is still to be made. One whose folder will never
    /// be made is dropped (reported like a refused rename). Call with `condition` locked.
    func takeRenameLocked(_ next: RenameJob) -> RenameJob? {
        var rename = next
        switch resolveFolderLocked(rename.parent) {
        case .waiting:
            return nil
        case .ready(let folder):
            if folder != rename.parent {
                rename.parent = folder
                write(.putRename(rename))
            }
        case .abandoned:
            break  // sent as it is: the server refuses the unknown folder and the rename is dropped
        }
        renames.begin(rename)
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
    ///
    /// Returns the outcomes (those of the deletes an rmdir carried first, then its own), or none
    /// when the operation went back to the queue.
    func attemptOperation(_ operation: NamespaceOperation) -> [OperationOutcome] {
        var outcomes: [OperationOutcome]
        do throws(Postponed) {
            switch operation.kind {
            case .makeFolder: outcomes = [try makeFolder(operation)]
            case .deleteFile: outcomes = [try deleteFile(operation)]
            case .removeFolder where !operation.absorbed.isEmpty:
                guard let removed = try removeFolderAndFiles(operation) else {
                    condition.lock()
                    operations.returnAbsorbed(of: operation)
                    condition.broadcast()
                    condition.unlock()
                    return []
                }
                outcomes = removed
            case .removeFolder: outcomes = [try removeFolder(operation)]
            case .makeSymlink: outcomes = [try makeSymlink(operation)]
            case .setMode: outcomes = [try setMode(operation)]
            }
        } catch {
            condition.lock()
            postponeLocked(operation)
            condition.unlock()
            return []
        }
        condition.lock()
        finishOperations(outcomes)
        condition.unlock()
        return outcomes
    }

    /// An rmdir carrying the deletes of the files the folder held (`rm -r`): when the server's
    /// folder holds exactly those files, each still at the version the mount showed, one
    /// delete of the folder removes them all; the outcomes of the rmdir and of each delete.
    /// Nil when it holds anything else, or another version (someone's edit): then each delete
    /// goes on its own, under its own conditions, and the rmdir after them.
    private func removeFolderAndFiles(_ operation: NamespaceOperation) throws(Postponed) -> [OperationOutcome]? {
        let expected = Dictionary(operation.absorbed.map { ($0.identifier, $0.baseVersion) }, uniquingKeysWith: { first, _ in first })
        var token: PageToken?
        var pages = 0
        repeat {
            let listed = try sending("rmdir \(operation.name)") { () throws(ProviderError) -> Page in
                try backend.children(of: operation.identifier, after: token, limit: 1_000)
            }
            switch listed {
            case .success(let page):
                for item in page.items {
                    guard let seen = expected[item.identifier], seen == nil || seen == item.version else { return nil }
                }
                token = page.next
            case .failure(.notFound):
                token = nil  // gone already: so are the files
            case .failure(let error):
                logger.warning("rmdir \(operation.name): the server's folder could not be listed (\(error)); its files go one by one")
                return nil
            }
            pages += 1
        } while token != nil && pages <= expected.count / 1_000 + 1
        if token != nil { return nil }  // more pages than the files removed here can fill
        let result = try sending("rmdir \(operation.name)") { () throws(ProviderError) in
            try backend.delete(operation.identifier, baseVersion: nil)
        }
        switch result {
        case .success, .failure(.notFound):
            logger.info("removed folder \(operation.name) with its \(operation.absorbed.count) files in one request")
            var done = operation
            done.absorbed = []
            return operation.absorbed.map { .deleted($0) } + [.deleted(done)]
        case .failure(let error):
            logger.warning("rmdir \(operation.name) with its files: \(error); they go one by one")
            return nil
        }
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
        operation.postponements += 1
        operation.notBefore = clock.now + .seconds(min(30, 1 << min(operation.postponements - 1, 5)))
        operations.putBack(operation)
        condition.broadcast()
    }

    /// The server answers again: operations put back while offline are due now.
    public func serverReachableAgain() {
        condition.lock()
        defer { condition.unlock() }
        operations.makeDue(at: clock.now)
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

    /// A link made offline: made now; a name taken meanwhile by a link to the same target is
    /// that link (this mount's own make whose answer was lost, or the same link made twice),
    /// by anything else, it is made under a conflict name, as a folder would be.
    private func makeSymlink(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        guard let parent = operation.parent, !parent.isLocal, let target = operation.target else {
            logger.error("symlink \(operation.name): the folder it was made in never reached the server")
            return .failed(operation, .notFound)
        }
        var name = operation.name
        for _ in 0..<2 {
            let result = try sending("symlink \(name)") { () throws(ProviderError) -> ProviderItem in
                try backend.createSymlink(named: name, in: parent, target: target)
            }
            switch result {
            case .success(let link):
                logger.info("made symlink \(link.name) (made offline)")
                return .madeLink(operation, link)
            case .failure(.nameTaken) where name == operation.name:
                if let existing = try serverItem(named: name, in: parent), existing.kind == .symlink,
                   existing.symlinkTarget == target {
                    return .madeLink(operation, existing)
                }
                name = ConflictName.make(for: operation.name, user: userName, at: Date())
                logger.warning("\(operation.name) exists on the server; the link made here is \(name)")
            case .failure(let error):
                logger.error("symlink \(name) not applied: \(error)")
                return .failed(operation, error)
            }
        }
        return .failed(operation, .nameTaken(name))
    }

    /// A chmod made offline: set now, on what its item is on the server (something made
    /// here: what its make made). Gone there meanwhile: nothing to set.
    private func setMode(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        var identifier = operation.identifier
        if identifier.isLocal {
            condition.lock()
            let resolution = resolveFolderLocked(identifier)
            condition.unlock()
            guard case .ready(let made) = resolution else {
                logger.warning("chmod \(operation.name): what it was made on never reached the server")
                return .failed(operation, .notFound)
            }
            identifier = made
        }
        guard let mode = operation.mode else { return .failed(operation, .invalidResponse("a chmod without a mode")) }
        let result = try sending("chmod \(operation.name)") { () throws(ProviderError) -> ProviderItem in
            try backend.update(identifier, ItemChanges(mode: mode), baseVersion: nil)
        }
        switch result {
        case .success(let item):
            logger.info("chmod \(operation.name) \(String(mode, radix: 8)) (made offline)")
            return .modeSet(operation, item)
        case .failure(.notFound):
            return .modeSet(operation, nil)
        case .failure(let error):
            logger.error("chmod \(operation.name) not applied: \(error)")
            return .failed(operation, error)
        }
    }

    /// Whether a chmod of `identifier` is still to be sent.
    func hasPendingMode(for identifier: ItemIdentifier) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return operations.hasMode(for: identifier)
    }

    private func deleteFile(_ operation: NamespaceOperation) throws(Postponed) -> OperationOutcome {
        var result = try sending("delete of \(operation.name)") { () throws(ProviderError) in
            try backend.delete(operation.identifier, baseVersion: operation.baseVersion)
        }
        if case .failure(.versionMismatch(let current?)) = result,
           isOwnUpload(current.version, of: operation.identifier) || holdsUnansweredSave(current) {
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
        case .failure(.locked(let holder)):
            let who = holder?.holderName ?? "someone else"
            logger.warning("\(operation.name) is locked for editing by \(who); the server's file is kept")
            return .kept(operation, reason: "locked for editing by \(who) when it was to be deleted; not deleted")
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
        while saves.inFlight[identifier] != nil || reporting[identifier] != nil {
            if !condition.wait(until: deadline) { break }
        }
        return saves.lastUploaded[identifier]?.result == version
    }

    /// True when `item` holds exactly the bytes of the file's upload whose answer was lost
    /// after its delete here (`DeletionRecords.unanswered`): sizes first, then the bytes.
    private func holdsUnansweredSave(_ item: ProviderItem) -> Bool {
        condition.lock()
        let save = deletions.unanswered[item.identifier]
        condition.unlock()
        guard let save, item.kind == .file, item.size == save.size else { return false }
        let holds = serverHolds(save.stagedPath, item: item.identifier, version: item.version, giveUp: { isStopping() })
        logger.debug("delete \(item.name): the server's version \(item.version) is \(holds ? "" : "not ")this mount's unanswered save")
        return holds
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

    /// Bookkeeping once operations are over (one, or an rmdir and the deletes it carried),
    /// their journal rows dropped in one commit. Call with `condition` locked.
    private func finishOperations(_ outcomes: [OperationOutcome]) {
        guard outcomes.count > 1 else {
            if let outcome = outcomes.first { write(.finishOperation(outcome.operation, madeFolder: finishOperation(outcome))) }
            return
        }
        for outcome in outcomes { _ = finishOperation(outcome) }
        writeFinished(outcomes.map(\.operation))
    }

    /// Bookkeeping once an operation is over, but its journal row; returns the folder or link
    /// it made, which the row's removal records. Call with `condition` locked. A folder made
    /// here becomes its server folder for everything still to go into it.
    private func finishOperation(_ outcome: OperationOutcome) -> ItemIdentifier? {
        let operation = outcome.operation
        operations.end(operation)
        reporting[operation.identifier, default: 0] += 1
        if operation.kind == .deleteFile, let unanswered = deletions.takeUnanswered(operation.identifier) {
            discardSnapshot(at: unanswered.stagedPath)
        }
        var made: ItemIdentifier?
        switch outcome {
        case .madeFolder(_, let folder):
            made = folder.identifier
            identities.folderMade(operation.identifier, as: folder.identifier)
            retargetLocked(from: operation.identifier, to: folder.identifier)
        case .madeLink(_, let link):
            // Remembered like a folder made here, so a chmod queued for it finds it.
            made = link.identifier
            identities.folderMade(operation.identifier, as: link.identifier)
            retargetLocked(from: operation.identifier, to: link.identifier)
        case .deleted, .modeSet:
            break
        case .kept(_, let reason):
            records.add(notApplied: Status.Failure(name: operation.name, reason: reason))
        case .failed(_, let error):
            records.add(notApplied: Status.Failure(name: operation.name, reason: error.description))
            if operation.kind.makesItem { identities.abandonFolder(operation.identifier) }
        }
        condition.broadcast()
        return made
    }

    /// Everything still aimed at the local folder `local` now goes to the server folder
    /// `folder`: queued and failed saves, renames, and operations. Call with `condition` locked.
    private func retargetLocked(from local: ItemIdentifier, to folder: ItemIdentifier) {
        for identifier in Array(saves.queued.keys) where saves.queued[identifier]!.parent == local {
            saves.updateQueued(identifier) { $0.parent = folder }
            write(.updateSave(saves.queued[identifier]!, failure: nil))
        }
        for identifier in Array(saves.failures.keys) where saves.failures[identifier]!.job.parent == local {
            saves.updateFailed(identifier) { $0.parent = folder }
            write(.updateSave(saves.failures[identifier]!.job, failure: saves.failures[identifier]!.reason))
        }
        for rename in renames.retarget(from: local, to: folder) { write(.putRename(rename)) }
        for operation in operations.retarget(from: local, to: folder) { write(.updateOperation(operation)) }
    }
}

extension Uploader {
    /// Operations not on the server yet, in order (the mount's view shows them done).
    public var pendingOperations: [NamespaceOperation] {
        condition.lock()
        defer { condition.unlock() }
        return operations.all
    }
}
