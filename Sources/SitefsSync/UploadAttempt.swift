import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

extension Uploader {
    /// Uploads one save, resolving what the server says without losing the edit:
    /// - unreachable, 5xx, 429 and an expired sign-in: retried with capped backoff until it
    ///   works (or a newer save of the file takes over, or the uploader stops);
    /// - 412, the server has a newer version: that version keeps the name and the edit is
    ///   created next to it as `NAME (conflict YYYY-MM-DD HHMMSS USER).EXT`;
    /// - 404, deleted on the server: the edit is created again under its name, and its
    ///   folder too if that was deleted with it (`remakeFolders`);
    /// - any other verdict: the edit is rescued (`rescue`), never left only in staging;
    /// then the wanted modification time is applied, and `finish` runs under the lock
    /// together with the last check for a time set meanwhile, so none is lost.
    func attempt(_ job: Job) -> Outcome {
        if job.createsFile { return applyingModificationTime(create(job)) }
        _ = beforeSendingSave?(job.identifier)
        let progress = progressCounter(for: job)
        var job = job
        var sawOwnEarlierSave = false
        var triesPastOwnLock = 0
        while true {
            let outcome: Outcome
            switch retrying(job, { () throws(ProviderError) -> ProviderItem in
                try backend.modifyContent(of: job.identifier, baseVersion: job.baseVersion, contentsOf: job.stagedPath,
                                          modified: job.modified, progress: progress)
            }) {
            case .success(let item):
                logger.info("uploaded \(job.name) (\(job.size) bytes, version \(item.version)) (\(job.identifier))")
                outcome = .uploaded(job, item)
            case .failure(.versionMismatch(let reported)):
                let lookup = reported.map { Result.success($0) } ?? serverLookup(job)
                if case .failure(.notFound) = lookup {
                    // A conditional write to a file that is not there (WebDAV answers 412): deleted.
                    outcome = isCancelled(job) ? .failed(job, .notFound) : recreate(job)
                    break
                }
                let current = try? lookup.get()
                logger.debug("upload \(job.name): 412 on base \(job.baseVersion ?? "none"); \(comparison(of: job, with: current))")
                if !sawOwnEarlierSave, let current, holdsPredecessor(of: job, item: current) {
                    // Our own save from before the restart: this one goes on top of it.
                    logger.info("\(job.name): the server has this mount's earlier save (its answer was lost); uploading the newer one over it")
                    condition.lock()
                    rebaseFollower(of: job.identifier, from: job.baseVersion, to: current.version)
                    condition.unlock()
                    job.baseVersion = current.version
                    sawOwnEarlierSave = true
                    continue
                }
                outcome = saveAsConflict(job, current: current)
            case .failure(.locked(let holder))
                where triesPastOwnLock < 3 && (holder?.heldHere == true || beforeSendingSave?(job.identifier) == true):
                // This mount's own lock, taken while the save was on its way (a program opened
                // the file for writing just then): sent again, now with its token.
                logger.debug("upload \(job.name): met this mount's own lock; sending it again")
                triesPastOwnLock += 1
                continue
            case .failure(.locked(let holder)):
                // Someone else is editing it: their version keeps the name, this edit goes
                // beside it as a conflict copy, as for a 412 (the server's item names them).
                logger.info("upload \(job.name): locked for editing by \(holder?.description ?? "someone else")")
                outcome = saveAsConflict(job, current: nil)
            case .failure(.notFound) where isCancelled(job):
                outcome = .failed(job, .notFound)  // deleted here on purpose: nothing to keep
            case .failure(.notFound):
                outcome = recreate(job)
            case .failure(let error):
                if !error.isUnreachable { logger.error("upload of \(job.name) failed: \(error)") }
                outcome = calls(forRescue: error, of: job) ? rescue(job, refusedWith: error) : .failed(job, error)
            }
            return applyingModificationTime(outcome)
        }
    }

    /// The server's metadata of the job's item (transient failures retried).
    private func serverLookup(_ job: Job) -> Result<ProviderItem, ProviderError> {
        retrying(job, { () throws(ProviderError) -> ProviderItem in try backend.item(job.identifier) })
    }

    /// The same, nil if gone or unreadable.
    private func serverItem(for job: Job) -> ProviderItem? { try? serverLookup(job).get() }

    /// Creates the job's content as `name` in `parent`; when that folder is gone on the
    /// server, in the folder made again from the job's chain (`remakeFolders`), and `parent`
    /// becomes that one.
    private func createFile(_ job: Job, named name: String, in parent: inout ItemIdentifier, modified: Timestamp?,
                            progress: TransferProgress?) -> Result<ProviderItem, ProviderError> {
        func send(_ folder: ItemIdentifier) -> Result<ProviderItem, ProviderError> {
            retrying(job, { () throws(ProviderError) -> ProviderItem in
                try backend.createFile(named: name, in: folder, contentsOf: job.stagedPath, modified: modified, progress: progress)
            })
        }
        let first = send(parent)
        guard case .failure(.notFound) = first, !isCancelled(job), let chain = chain(job.folders, leadsTo: parent) else { return first }
        switch remakeFolders(chain, for: job.name, giveUp: { self.supersededOrStopping(job) }) {
        case .success(let remade):
            parent = remade.folder
            return send(parent)
        case .failure(let error):
            return .failure(error)
        }
    }

    /// True when the server's current version of `item` is exactly the job's predecessor.
    private func holdsPredecessor(of job: Job, item: ProviderItem) -> Bool {
        guard let predecessor = job.predecessor else { return false }
        return holds(predecessor.stagedPath, size: predecessor.size, in: item, for: job)
    }

    /// True when `item`, as the server has it now, is exactly the snapshot at `snapshot`
    /// (sizes first, then the bytes).
    private func holds(_ snapshot: String, size: Int64, in item: ProviderItem, for job: Job) -> Bool {
        item.kind == .file && item.size == size && serverHolds(snapshot, item: item.identifier, version: item.version, for: job)
    }

    /// For the debug log: what a 412 or a taken name is compared with.
    private func comparison(of job: Job, with server: ProviderItem?) -> String {
        "the server has \(server.map { "\($0.identifier) version \($0.version), \($0.size) bytes" } ?? "nothing"); "
            + "this save \(job.size) bytes, earlier save \(job.predecessor.map { "\($0.size) bytes" } ?? "none")"
    }

    private func progressCounter(for job: Job) -> TransferProgress? {
        condition.lock()
        defer { condition.unlock() }
        return saves.progress[job.identifier]
    }

    /// A file made on the mount reaches the server for the first time. Its name may have been
    /// taken on the server meanwhile: unless that is our own earlier attempt (a lost answer,
    /// recognised by content), the file is created under a conflict name, never over it.
    private func create(_ job: Job) -> Outcome {
        guard var parent = job.parent else { return rescue(job, refusedWith: .invalidName("a new file without a folder")) }
        let progress = progressCounter(for: job)
        var name = job.name
        for attempt in 0..<2 {
            switch createFile(job, named: name, in: &parent, modified: job.modified, progress: progress) {
            case .success(let item):
                logger.info("created \(item.name) (\(job.size) bytes, version \(item.version))")
                return .created(job, item)
            case .failure(.nameTaken) where attempt == 0:
                // Nil too when it cannot be listed; transient failures are retried: a spurious
                // "no" here would make a conflict copy.
                let existing = try? serverChild(named: name, in: parent, giveUp: { supersededOrStopping(job) }).get() ?? nil
                logger.debug("create \(name): name taken; \(comparison(of: job, with: existing))")
                if let existing, holds(job.stagedPath, size: job.size, in: existing, for: job) {
                    logger.info("created \(existing.name) (confirmed after a lost response)")
                    return .created(job, existing)
                }
                if let existing, holdsPredecessor(of: job, item: existing) {
                    // Created before a restart from an earlier save of this file: this save
                    // is its next version.
                    logger.info("\(name): the server has this mount's earlier save (its answer was lost); uploading the newer one over it")
                    switch retrying(job, { () throws(ProviderError) -> ProviderItem in
                        try backend.modifyContent(of: existing.identifier, baseVersion: existing.version, contentsOf: job.stagedPath,
                                                  modified: job.modified, progress: progress)
                    }) {
                    case .success(let item): return .created(job, item)
                    case .failure(.versionMismatch), .failure(.notFound): break  // changed meanwhile: a conflict name after all
                    case .failure(let error): return .failed(job, error)
                    }
                }
                name = ConflictName.make(for: job.name, user: userName, at: Date())
                logger.warning("\(job.name) exists on the server already; the new file is saved as \(name)")
            case .failure(let error):
                if !error.isUnreachable { logger.error("creating \(job.name) failed: \(error)") }
                return calls(forRescue: error, of: job) ? rescue(job, refusedWith: error) : .failed(job, error)
            }
        }
        return rescue(job, refusedWith: .nameTaken(name))
    }

    func retrying<Value>(_ job: Job, _ call: () throws(ProviderError) -> Value) -> Result<Value, ProviderError> {
        retrying("upload of \(job.name)", giveUp: { supersededOrStopping(job) }, call)
    }

    /// Runs `call`, retrying transient failures with backoff from 250 ms to 30 s until it
    /// works, fails for good, or `giveUp` says the attempt is moot.
    /// `stopWhenOffline`: a request not sent because the mount is offline ends the retries
    /// at once (the caller puts the work back in its queue, where it can still be changed).
    func retrying<Value>(_ what: @autoclosure () -> String, giveUp: () -> Bool, stopWhenOffline: Bool = false,
                         _ call: () throws(ProviderError) -> Value) -> Result<Value, ProviderError> {
        var delay: Duration = .milliseconds(250)
        while true {
            do {
                let value = try call()
                setSignInRequired(false)
                return .success(value)
            } catch {
                let waitForSignIn: Bool
                if case .notAuthenticated = error { waitForSignIn = true } else { waitForSignIn = false }
                guard error.isTransient || waitForSignIn else { return .failure(error) }
                if giveUp() { return .failure(error) }
                if stopWhenOffline, case .offline = error { return .failure(error) }
                if waitForSignIn {
                    // For `sitefs status`; the log line is the connection monitor's, which
                    // says it once for every kind of request.
                    setSignInRequired(true)
                } else if case .offline = error {
                    logger.debug("\(what()) waits for the server: \(error)")  // the monitor said it once
                } else {
                    logger.warning("\(what()) will be retried in \(delay): \(error)")
                }
                // A server that said when to come back (429/503 Retry-After) is taken at its word.
                // The wait ends early once the attempt is moot (a newer save, unmount), or when
                // the mount finds the server back after being offline: then it goes at once.
                let connection = (backend as? MonitoredBackend)?.monitor
                let reconnections = connection?.reconnections ?? 0
                clock.sleep(for: max(delay, .seconds(error.retryAfter ?? 0))) {
                    giveUp() || connection?.cameBack(since: reconnections) == true
                }
                if giveUp() { return .failure(error) }
                delay = min(delay * 2, .seconds(30))
            }
        }
    }

    func isCancelled(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return deletions.isDeletedHere(job.identifier)
    }

    private func setSignInRequired(_ value: Bool) {
        condition.lock()
        defer { condition.unlock() }
        records.signInRequired = value
    }

    private func saveAsConflict(_ job: Job, current: ProviderItem?) -> Outcome {
        let current = current ?? serverItem(for: job)
        // A retried upload whose first attempt did reach the server (the answer was lost)
        // finds its own content there: that is success, not a conflict.
        if let current, holds(job.stagedPath, size: job.size, in: current, for: job) {
            logger.info("uploaded \(job.name) (confirmed after a lost response, version \(current.version))")
            return .uploaded(job, current)
        }
        guard var parent = current?.parent ?? job.parent else {
            return rescue(job, refusedWith: .versionMismatch(current: current))
        }
        let name = ConflictName.make(for: current?.name ?? job.name, user: userName, at: Date())
        switch createFile(job, named: name, in: &parent, modified: nil, progress: nil) {
        case .success(let copy):
            let why = current?.lock.flatMap { $0.heldHere ? nil : "is locked for editing by \($0.holderName)" } ?? "changed on the server"
            let versus = current.map { "; the server's is \(SyncStatus.ConflictingVersion($0).description)" } ?? ""
            logger.warning("conflict: \(job.name) \(why); your edit was saved as \(copy.name)\(versus)")
            return .conflicted(job, original: current, copy: copy)
        case .failure(let error):
            return calls(forRescue: error, of: job) ? rescue(job, refusedWith: error) : .failed(job, error)
        }
    }

    /// True when the server's `version` has exactly the bytes of the snapshot at `snapshot`.
    /// Transient failures are retried (for `job`): a spurious "no" would make a conflict copy.
    private func serverHolds(_ snapshot: String, item: ItemIdentifier, version: String, for job: Job) -> Bool {
        serverHolds(snapshot, item: item, version: version, giveUp: { supersededOrStopping(job) })
    }

    /// True when the server's `version` of `item` has exactly the bytes of `snapshot`
    /// (transient failures retried until `giveUp`).
    func serverHolds(_ snapshot: String, item: ItemIdentifier, version: String, giveUp: () -> Bool) -> Bool {
        let path = snapshot + ".compare"
        let fetched = retrying("comparison with the server's \(version)", giveUp: giveUp, { () throws(ProviderError) -> FetchOutcome in
            let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw .localIO(path) }
            defer { close(descriptor) }
            // Only the snapshot's size is of use: a longer version cannot hold the same bytes.
            return try backend.fetchContent(of: item, version: version, range: nil, ifNoneMatch: nil,
                                            into: .file(descriptor: descriptor, offset: 0, promisedSize: FileComparison.size(of: snapshot)))
        })
        defer { unlink(path) }
        guard case .success = fetched else { return false }
        return FileComparison.sameBytes(snapshot, path)
    }

    private func recreate(_ job: Job) -> Outcome {
        var parent = job.parent ?? ItemIdentifier.site(job.identifier.site)
        var name = job.name
        for attempt in 0..<2 {
            switch createFile(job, named: name, in: &parent, modified: nil, progress: nil) {
            case .success(let item):
                logger.warning("\(job.name) was deleted on the server while edited here; it was created again as \(item.name)")
                return .recreated(job, item)
            case .failure(.nameTaken) where attempt == 0:
                name = ConflictName.make(for: job.name, user: userName, at: Date())
            case .failure(let error):
                return calls(forRescue: error, of: job) ? rescue(job, refusedWith: error) : .failed(job, error)
            }
        }
        return rescue(job, refusedWith: .nameTaken(name))
    }

    /// After an upload: the time (and the mode) the job carries, or one set while it was in
    /// flight, where the server's differs; then the job is finished.
    private func applyingModificationTime(_ outcome: Outcome) -> Outcome {
        var outcome = outcome
        var modified = outcome.job.modified
        var mode = outcome.job.mode
        while true {
            condition.lock()
            if let late = saves.takeLateModified(outcome.job.identifier) { modified = late }
            if let late = saves.takeLateMode(outcome.job.identifier) { mode = late }
            // The upload itself carried the job's time; only a different one needs a request.
            let time = modified.flatMap { time in outcome.item?.modified == time ? nil : time }
            let newMode = mode.flatMap { mode in outcome.item?.mode == mode ? nil : mode }
            guard let item = outcome.item, time != nil || newMode != nil else {
                finish(outcome)
                condition.unlock()
                return outcome
            }
            condition.unlock()
            modified = nil
            mode = nil
            do throws(ProviderError) {
                outcome = outcome.with(try backend.update(item.identifier, ItemChanges(modified: time, mode: newMode), baseVersion: nil))
            } catch {
                logger.warning("could not set the modification time or mode of \(outcome.job.name): \(error)")
            }
        }
    }
}

extension Uploader.Outcome {
    /// The item the edit now lives in, if it reached the server.
    public var item: ProviderItem? {
        switch self {
        case .uploaded(_, let item), .created(_, let item), .recreated(_, let item): return item
        case .conflicted(_, _, let copy), .rescued(_, let copy, _, _): return copy
        case .failed: return nil
        }
    }

    func with(_ item: ProviderItem) -> Self {
        switch self {
        case .uploaded(let job, _): return .uploaded(job, item)
        case .recreated(let job, _): return .recreated(job, item)
        case .created(let job, _): return .created(job, item)
        case .conflicted(let job, let original, _): return .conflicted(job, original: original, copy: item)
        case .rescued(let job, _, let savedAs, let reason): return .rescued(job, copy: item, savedAs: savedAs, reason: reason)
        case .failed: return self
        }
    }
}

enum FileComparison {
    /// A file's size (0 when it cannot be read).
    static func size(of path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Compares two files chunk by chunk.
    static func sameBytes(_ first: String, _ second: String) -> Bool {
        guard let a = FileHandle(forReadingAtPath: first), let b = FileHandle(forReadingAtPath: second) else { return false }
        defer {
            try? a.close()
            try? b.close()
        }
        while true {
            let left = (try? a.read(upToCount: 1 << 20)) ?? nil, right = (try? b.read(upToCount: 1 << 20)) ?? nil
            if left != right { return false }
            if left == nil || left!.isEmpty { return true }
        }
    }
}

/// `NAME (conflict YYYY-MM-DD HHMMSS USER).EXT`, within the 255-byte name limit; `kind`
/// says why the copy was made ("conflict", "rescued").
enum ConflictName {
    static func make(for name: String, user: String, at date: Date, kind: String = "conflict") -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let stamp = String(format: "%04d-%02d-%02d %02d%02d%02d", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
        let suffix = " (\(kind) \(stamp) \(user))"
        var base = name, ext = ""
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            base = String(name[..<dot])
            ext = String(name[dot...])
        }
        while (base + suffix + ext).utf8.count > 255, !base.isEmpty { base.removeLast() }
        return base + suffix + ext
    }
}
