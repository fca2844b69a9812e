import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension SitefsFilesystem {
    /// An open for writing downloads the whole file first; the caller may give up on that
    /// (`context.interruption`: a signal, FUSE_INTERRUPT), and its open then fails with EINTR
    /// within about a second, however slow the server. Another opener that was waiting for
    /// that download was not interrupted: it tries again and downloads itself.
    public func open(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> OpenReply {
        if VirtualNodeTable.isVirtual(inode) { return try virtualOpen(try virtualNode(inode), flags: flags, context: context) }
        var attempts = 0
        while true {
            attempts += 1
            do {
                return try openOnce(inode, flags: flags, context: context)
            } catch .staleNFSFileHandle where attempts < 3 {
                // A new file was created on the server meanwhile: once that is reported, open the
                // server's item, which the inode now stands for.
                guard let identifier = inodes.identifier(of: inode) else { throw .staleNFSFileHandle }
                if identifier.isLocal { _ = sync.settle(identifier, timeout: .seconds(5)) }
            } catch .interrupted where attempts < 3 && !context.interruption.isCancelled {
                // The download this open waited for was given up by its own caller.
                continue
            }
        }
    }

    private func openOnce(_ inode: InodeNumber, flags: Int32, context: RequestContext) throws(Errno) -> OpenReply {
        var item = try currentItem(try identifier(of: inode))
        itemReadPause.withLock { $0 }?()
        guard item.kind == .file else { throw item.kind == .symlink ? .tooManySymbolicLinkLevels : .isDirectory }
        let writing = flags & O_ACCMODE != O_RDONLY
        if writing && (!item.capabilities.contains(.write) || configuration.readOnly) { throw .permissionDenied }
        if flags & O_ACCMODE != O_WRONLY {
            // atime as `relatime` keeps it, at open: reads served from the kernel's page cache
            // never reach the mount, so the open is the read it can see.
            localTimes.read(item.identifier, modified: AttributeMapping.timespec(item.modified), now: Self.now())
        }
        let remote = !writing && !item.identifier.isLocal && copies.withLock({ $0[item.identifier] }) == nil
            && sync.state(of: item.identifier, reading: .shown).shownSave == nil
        if remote, let applied = cache.item(item.identifier), applied.version != item.version {
            // A save reported since the item was read above (its copy and its shown save are
            // gone now, which is why this reads remotely): the server holds the version its
            // answer brought, and the one read before is no longer there to read.
            item = applied
        }
        let keepCache = !item.identifier.isLocal && openedVersions.withLock { versions in
            defer { versions[item.identifier] = item.version }
            return versions[item.identifier] == item.version
        }
        if remote {
            // Read-only and nothing local: ranged reads, pinned to this version; none for a
            // thumbnailer or indexer, which would download what a person only looked at.
            try refuseBackgroundReader(context, item)
            let reader = RemoteReader(identifier: item.identifier, version: item.version, size: item.size, backend: backend,
                                      maximumWindow: configuration.maximumReadAhead)
            logger.debug("open \(item.name) (\(item.identifier)): ranged reads of version \(item.version), \(item.size) bytes, keep cache: \(keepCache)")
            return OpenReply(handle: handles.add(.remote(reader)), keepCache: keepCache)
        }
        let copy = try materialize(item, truncate: writing && flags & O_TRUNC != 0, writer: writing,
                                   interruption: context.interruption)
        if writing { writerOpened(item, context: context) }
        // Revalidation may have brought newer content than the metadata said: then not.
        copy.condition.lock()
        let unchanged = copy.baseVersion == item.version
        copy.condition.unlock()
        logger.debug("open \(item.name) (\(item.identifier))\(writing ? " for writing" : ""): local copy of version \(item.version), \(item.size) bytes, keep cache: \(keepCache && unchanged)")
        return OpenReply(handle: handles.add(.local(copy, writable: writing)), keepCache: keepCache && unchanged,
                         writesBypassCache: OpenReply.isWriteOnly(flags))
    }

    /// A new file exists only here until it has been closed and left alone for the settle
    /// delay: then its upload creates it on the server. Renamed over an existing file before
    /// that, it becomes a new version of that file; deleted, it never reaches the server.
    /// Works offline: the save is journaled like any other.
    public func create(parent: InodeNumber, name: FileName, mode: UInt32, flags: Int32, context: RequestContext) throws(Errno) -> (Entry, OpenReply) {
        try refuseVirtual(parent, name: name)
        let folder = try writableFolder(parent)
        let fileName = try serverName(name)
        if let violation = ItemName.violation(of: fileName) {
            logger.warning("create \(fileName.debugDescription): the server would refuse this name (\(violation))")
            throw .invalidArgument
        }
        if try listing(of: folder.identifier).identifier(named: fileName) != nil { throw .fileExists }
        // LibreOffice's lock file: the document's lock on the server first (EEXIST when
        // someone else holds it: their lock file shows then).
        try lockDocument(forLockFile: fileName, in: folder)
        let now = Timestamp.now()
        // The kernel has applied the creator's umask; the server's default needs no mode.
        let permissions = UInt16(truncatingIfNeeded: mode) & ProviderItem.permissionBits
        let item = ProviderItem(identifier: .local(in: folder.identifier.site), parent: folder.identifier, name: fileName,
                                kind: .file, size: 0, created: now, modified: now, createdBy: userName, modifiedBy: userName,
                                version: "", capabilities: ProviderItem.localFileCapabilities,
                                mode: permissions == AttributeMapping.defaultFileMode ? nil : permissions)
        do throws(SyncError) {
            _ = try sync.apply(.createFile(item))
        } catch {
            throw errorNumber(for: error, "create \(fileName)")
        }
        cache.upsert(item)
        let copy: LocalCopy
        do {
            copy = try materialize(item, truncate: true, writer: true)
        } catch {
            sync.forget(item.identifier)
            cache.remove(item.identifier)
            throw error
        }
        // Saved on close even if nothing is written: `touch` makes an empty file.
        copy.condition.lock()
        copy.dirty = true
        copy.condition.unlock()
        localTimes.entriesChanged(folder.identifier, now: Self.now())
        recordMaker(of: inodes.inode(for: item.identifier), context: context)
        let entry = entry(for: item)
        inodes.countLookup(entry.attributes.inode)
        return (entry, OpenReply(handle: handles.add(.local(copy, writable: true)), writesBypassCache: OpenReply.isWriteOnly(flags)))
    }

    /// The shared local copy of a file, created (downloaded, or empty when truncating) by
    /// the first opener; later openers wait for that download instead of starting another.
    /// A copy left from an earlier open is revalidated with If-None-Match.
    func materialize(_ item: ProviderItem, truncate: Bool, writer: Bool,
                     interruption: Cancellation = .never) throws(Errno) -> LocalCopy {
        if writer {
            // A pinned copy about to change is no longer a server version: its record goes
            // first (durably), and comes back once the server has the save (PinKeeper).
            do { try sync.changePins(.forgetKept(item.identifier)) } catch {
                logger.error("pins: cannot update the record of \(item.name) before writing: \(error)")
                throw .ioError
            }
        }
        let folders = item.parent.flatMap(folderChain(of:))
        // The handle is reserved while the registry is locked, so a concurrent release cannot
        // delete the copy between finding it here and using it.
        let (copy, isNew, wasUnused) = copies.withLock { copies -> (LocalCopy, Bool, Bool) in
            let existing = copies[item.identifier]
            let copy = existing ?? LocalCopy(identifier: item.identifier, path: content.copyPath(for: item.identifier))
            if existing == nil { copies[item.identifier] = copy }
            copy.condition.lock()
            defer { copy.condition.unlock() }
            let unused = copy.handles == 0
            copy.handles += 1
            if writer { copy.writers += 1 }
            copy.knownItem = item
            if let folders { copy.knownFolders = folders }
            return (copy, existing == nil, unused)
        }
        do {
            try prepare(copy, for: item, isNew: isNew, wasUnused: wasUnused, truncate: truncate, interruption: interruption)
            return copy
        } catch {
            copy.condition.lock()
            copy.handles -= 1
            if writer { copy.writers -= 1 }
            let failed: Bool
            if case .failed = copy.state { failed = true } else { failed = false }
            copy.condition.unlock()
            if failed {
                // Dropped under the key it has now, not `item`'s: a new file's upload that
                // finished while this ran moved the copy to the server's identifier
                // (`rekeyCopy`), where, left behind failed, it failed the next open, and the
                // pin keeper's pass that the upload asked for (which does not retry), of the
                // same file. Lock order: the registry, then the copy's lock (as `rekeyCopy`).
                copies.withLock { copies in
                    copy.condition.lock()
                    let key = copy.identifier
                    copy.condition.unlock()
                    if copies[key] === copy { copies[key] = nil }
                }
            } else {
                cleanUpIfDone(copy)
            }
            throw error
        }
    }

    /// Fills a new copy (download, or empty when truncating) or readies an existing one:
    /// later openers wait for the first one's download; an unused clean copy is revalidated.
    private func prepare(_ copy: LocalCopy, for item: ProviderItem, isNew: Bool, wasUnused: Bool, truncate: Bool,
                         interruption: Cancellation) throws(Errno) {
        // Asked before the copy's lock: whether a clean copy may be revalidated (a save of it
        // still on its way means the copy is newer than the server).
        let uploadPending = !isNew && !item.identifier.isLocal && !sync.state(of: item.identifier, reading: .queue).isIdle
        copy.condition.lock()
        defer { copy.condition.unlock() }
        if isNew {
            copy.condition.unlock()
            let result = download(item, into: copy.path, truncate: truncate, interruption: interruption)
            copy.condition.lock()
            defer { copy.condition.broadcast() }
            switch result {
            case .success(let (descriptor, version)):
                copy.descriptor = descriptor
                copy.baseVersion = version
                copy.state = .ready
                copy.dirty = truncate && item.size > 0
            case .failure(let error):
                copy.state = .failed(error)
                throw error
            }
            return
        }
        try copy.waitUntilLoaded(interruption: interruption)
        if truncate {
            copy.waitWhileSaving()
            try copy.unshare(copying: false)
            guard ftruncate(copy.descriptor, 0) == 0 else { throw .ioError }
            copy.dirty = true
        } else if wasUnused && !copy.dirty && !item.identifier.isLocal && !uploadPending {
            // A clean copy left from an earlier open: revalidate (usually a 304) before use.
            try revalidate(copy, against: item, interruption: interruption)
        }
    }

    private func download(_ item: ProviderItem, into path: String, truncate: Bool,
                          interruption: Cancellation) -> Result<(Int32, String), Errno> {
        // A new file, never one left at this path: that may still be a staged snapshot.
        let descriptor = content.newCopy(at: path)
        guard descriptor >= 0 else {
            logger.error("cannot create local copy \(path): \(ContentDirectory.lastError)")
            return .failure(.ioError)
        }
        if truncate { return .success((descriptor, item.version)) }
        if let shown = sync.state(of: item.identifier, reading: .shown).shownSave, !shown.isOnServer {
            // A save the server does not have yet, whose copy went with a restart: that save
            // is the file's content, and a new save builds on the version it was based on.
            let pending = shown.latest
            guard ContentDirectory.copyFile(from: pending.stagedPath, to: descriptor) else {
                close(descriptor)
                Glibc.unlink(path)
                logger.error("cannot restore \(item.name) from \(pending.stagedPath): \(ContentDirectory.lastError)")
                return .failure(.ioError)
            }
            return .success((descriptor, item.identifier.isLocal ? "" : pending.baseVersion ?? item.version))
        }
        if item.identifier.isLocal {
            guard sync.state(of: item.identifier, reading: .namespace).created != nil, item.size == 0 else {
                // Its upload finished meanwhile: the caller retries with the server's item.
                close(descriptor)
                Glibc.unlink(path)
                return .failure(.staleNFSFileHandle)
            }
            return .success((descriptor, ""))
        }
        do throws(ProviderError) {
            let outcome = try backend.fetchContent(of: item.identifier, version: nil, range: nil, ifNoneMatch: nil,
                                                   into: .file(descriptor: descriptor, offset: 0, promisedSize: item.size),
                                                   cancellation: interruption)
            guard case .fetched(let version, _) = outcome else { throw .invalidResponse("304 without a condition") }
            return .success((descriptor, version))
        } catch {
            close(descriptor)
            Glibc.unlink(path)
            return .failure(handle(error, "download \(item.name)", dropping: item.identifier))
        }
    }

    /// Revalidates an unused local copy with If-None-Match; on a newer version the new
    /// content is downloaded beside it and swapped in. Called with the copy's condition
    /// locked; the request runs with it unlocked (other openers wait for `.loading`).
    private func revalidate(_ copy: LocalCopy, against item: ProviderItem, interruption: Cancellation) throws(Errno) {
        copy.state = .loading
        let base = copy.baseVersion
        copy.condition.unlock()
        let result = downloadIfChanged(item, since: base, beside: copy.path, interruption: interruption)
        copy.condition.lock()
        defer { copy.condition.broadcast() }
        copy.state = .ready
        switch result {
        case .success(nil):
            return
        case .success(let (descriptor, version)?):
            close(copy.descriptor)
            copy.descriptor = descriptor
            copy.baseVersion = version
        case .failure(let error):
            throw error
        }
    }

    private func downloadIfChanged(_ item: ProviderItem, since version: String?, beside path: String,
                                   interruption: Cancellation) -> Result<(Int32, String)?, Errno> {
        let fresh = path + ".new"
        let descriptor = Glibc.open(fresh, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return .failure(.ioError) }
        do throws(ProviderError) {
            let outcome = try backend.fetchContent(of: item.identifier, version: nil, range: nil, ifNoneMatch: version,
                                                   into: .file(descriptor: descriptor, offset: 0, promisedSize: item.size),
                                                   cancellation: interruption)
            guard case .fetched(let current, _) = outcome else {
                close(descriptor)
                Glibc.unlink(fresh)
                return .success(nil)
            }
            guard Glibc.rename(fresh, path) == 0 else { throw .localIO(ContentDirectory.lastError) }
            return .success((descriptor, current))
        } catch where error.isUnreachable {
            // Offline: the copy we have (a pinned file's) is what there is; it is checked
            // again on the next open once the server is back.
            close(descriptor)
            Glibc.unlink(fresh)
            logger.debug("revalidate \(item.name): \(error); the local copy is used as it is")
            return .success(nil)
        } catch {
            close(descriptor)
            Glibc.unlink(fresh)
            return .failure(handle(error, "revalidate \(item.name)", dropping: item.identifier))
        }
    }

    public func read(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        switch handles.file(handle) {
        case .remote(let reader):
            do {
                return try reader.read(offset: offset, count: size, into: buffer)
            } catch {
                throw self.handle(error, "read \(reader.identifier)", dropping: reader.identifier)
            }
        case .local(let copy, _):
            let wanted = UnsafeMutableRawBufferPointer(rebasing: buffer[..<min(max(size, 0), buffer.count)])
            return try systemCall { try FileDescriptor(rawValue: copy.descriptor).read(fromAbsoluteOffset: offset, into: wanted) }
        case nil:
            throw .badFileDescriptor
        }
    }

    /// Remote reads are lent straight out of the reader's window; local ones are read into
    /// a buffer of the lease's own.
    public func lend(_ inode: InodeNumber, handle: HandleID, offset: Int64, size: Int) throws(Errno) -> ReadLease {
        guard case .remote(let reader)? = handles.file(handle) else {
            return try lendByReading(inode, handle: handle, offset: offset, size: size)
        }
        do {
            return try reader.lend(offset: offset, count: size)
        } catch {
            throw self.handle(error, "read \(reader.identifier)", dropping: reader.identifier)
        }
    }

    public func write(_ inode: InodeNumber, handle: HandleID, offset: Int64, data: UnsafeRawBufferPointer, flags: Int32) throws(Errno) -> Int {
        guard case .local(let copy, let writable)? = handles.file(handle) else { throw .badFileDescriptor }
        guard writable else { throw .badFileDescriptor }
        return try copy.change { (descriptor) throws(Errno) -> Int in
            try systemCall { try FileDescriptor(rawValue: descriptor).writeAll(toAbsoluteOffset: offset, data) }
        }
    }

    /// close(): a writer's changes are snapshotted (fsynced into staging) before close
    /// returns, then uploaded in the background.
    /// Not the last word while the file stays open: the upload waits a moment, or for the
    /// last close (`release`), so a shell's `> file`, which closes the empty file it opened
    /// before the command writes to it, does not send that empty file as a version.
    public func flush(_ inode: InodeNumber, handle: HandleID, context: RequestContext) throws(Errno) {
        guard case .local(let copy, true)? = handles.file(handle) else { return }
        try save(copy, openAfter: true)
    }

    public func fsync(_ inode: InodeNumber, handle: HandleID, dataOnly: Bool) throws(Errno) {
        guard case .local(let copy, true)? = handles.file(handle) else { return }
        try save(copy, openAfter: true)
    }

    /// Snapshots a dirty copy and queues its upload, conditional on the version it was based on.
    ///
    /// The copy's lock is held only to decide and to record: staging (a hard link or a copy,
    /// fsynced) and the journal's commit run with it released and `saving` set, so a `stat`
    /// or a read of the file meanwhile is answered at once, while writers, truncation, a set
    /// time and cleanup wait for the save as they waited for the lock before.
    /// `openAfter`: the file may stay open for writing after this (see `flush`).
    func save(_ copy: LocalCopy, openAfter: Bool = false) throws(Errno) {
        copy.condition.lock()
        copy.waitWhileSaving()
        copy.waitForChanges()
        guard copy.dirty, !copy.unlinked else {
            copy.condition.unlock()
            return
        }
        // A file only here is known by the namespace for sure (a listing may have refreshed
        // the cache without it); its job must name where to create it. A server file the
        // change feed reported deleted while open is no longer cached: its name and folder as
        // the handle knew them let the upload create it again (no edit is lost).
        let known = copy.identifier.isLocal ? knownItem(copy.identifier) : cache.item(copy.identifier) ?? copy.knownItem
        if copy.identifier.isLocal, known?.parent == nil {
            copy.condition.unlock()
            logger.error("cannot save \(copy.identifier): the new file's folder is unknown")
            throw .ioError
        }
        if copy.identifier.isLocal, let known, SyncEngine.keepsLocal(known.name) {
            copy.dirty = false  // a lock or swap file: its content lives in the local copy only
            copy.condition.unlock()
            return
        }
        // A new file still empty, closed by a descriptor while others may stay open (a
        // shell's `> file` closes the one it opened before the command writes): there is
        // nothing to keep yet, and its last close (`release`) records it. Saves it spares:
        // half of what a shell loop of new files staged and fsynced.
        if openAfter, copy.identifier.isLocal, copy.size() == 0 {
            copy.condition.unlock()
            return
        }
        copy.saving = true
        let (identifier, path, descriptor) = (copy.identifier, copy.path, copy.descriptor)
        let size = copy.size() ?? 0
        let modified = copy.pendingModified ?? copy.settledModificationTime()
        let baseVersion = copy.baseVersion
        let foldersWhenOpened = copy.knownFolders
        copy.condition.unlock()
        // Where its folder stands, to make it again should it be gone on the server when the
        // upload goes; as the file was opened when the cache has forgotten it meanwhile.
        let folders = known?.parent.flatMap { parent in
            folderChain(of: parent) ?? (foldersWhenOpened?.folder == parent ? foldersWhenOpened : nil)
        }

        var linked = false
        let outcome = Result { () throws(Errno) -> String in
            savePause.withLock { $0 }?()
            // A small snapshot's bytes go into its journal row, which makes it durable with
            // the row's one commit: the snapshot file then needs no fsync of its own.
            let small = size <= Int64(SaveJob.journaledContentLimit)
                ? ContentDirectory.contents(of: descriptor, size: Int(size)) : nil
            let staged: String
            do throws(ProviderError) {
                if let link = try content.stage(linking: path, descriptor: descriptor, durably: small == nil) {
                    staged = link
                    linked = true
                } else {
                    staged = try content.stage(from: descriptor, durably: small == nil)
                }
            } catch {
                throw handle(error, "stage \(identifier)")
            }
            do {
                // A new file is made with its mode; a server file's chmod goes on its own.
                try sync.save(SaveJob(identifier: identifier, name: known?.name ?? identifier.description,
                                       parent: known?.parent, stagedPath: staged, size: size,
                                       baseVersion: baseVersion, modified: modified, folders: folders,
                                       mode: identifier.isLocal ? known?.mode : nil, content: small),
                              openAfter: openAfter)
            } catch {
                // Not journaled means not safe: the save fails and the copy stays dirty.
                Glibc.unlink(staged)
                throw .ioError
            }
            return staged
        }

        copy.condition.lock()
        defer { copy.condition.unlock() }
        copy.saving = false
        copy.condition.broadcast()
        if linked { copy.sharesSnapshot = true }
        if case .failure(let error) = outcome { throw error }
        copy.dirty = false
        copy.pendingModified = nil
        // Deleted while staging: `forgetDeleted` marks the copy before it cancels the item's
        // uploads, so either it cancels this job or this sees the mark.
        if copy.unlinked { sync.forget(identifier) }
    }

    public func release(_ inode: InodeNumber, handle: HandleID, flags: Int32) {
        let file = handles.removeFile(handle)
        if case .remote(let reader)? = file { reader.close() }
        guard case .local(let copy, let writable)? = file else { return }
        copy.condition.lock()
        copy.handles -= 1
        if writable { copy.writers -= 1 }
        let dirty = copy.dirty
        let identifier = copy.identifier
        let lastWriter = writable && copy.writers == 0
        copy.condition.unlock()
        if dirty { try? save(copy) }  // e.g. written through mmap after the last flush
        if lastWriter { sync.fileClosed(identifier) }  // what its flushes saved goes now
        // After the save is queued: the lock goes once it has reached the server.
        if writable { writerClosed(identifier) }
        cleanUpIfDone(copy)
    }

    /// stopProvidingItem: with no handle open and the server holding the last save, the
    /// local copy goes away, unless it is pinned.
    /// `ignoringPins`: the caller knows no pin covers it any more (see `PinKeeper`).
    func cleanUpIfDone(_ copy: LocalCopy, ignoringPins: Bool = false) {
        copies.withLock { copies in
            copy.condition.lock()
            defer { copy.condition.unlock() }
            guard copy.handles == 0, !copy.dirty, !copy.saving, sync.state(of: copy.identifier, reading: .queue).isIdle, copies[copy.identifier] === copy,
                  !copy.identifier.isLocal || copy.unlinked,  // a file only here: the copy is its content
                  copy.unlinked || ignoringPins || isNotPinned(copy.identifier)  // kept on this device
            else { return }
            copies[copy.identifier] = nil
            copy.closeAndDelete(in: content)
        }
    }

    /// What reached the server: metadata from its answer, identities moved where a new file
    /// became a server item, copies' base versions moved on, and copies nothing holds any
    /// more removed. Called on an upload worker with no lock of the engine's held.
    func apply(_ event: SyncEvent) {
        switch event {
        case .uploaded(let item, let base):
            // Not for a file deleted here while its upload was on its way: that answer would
            // bring the deleted name back into its folder's listing.
            cache.upsertIfKnown(item)
            if let copy = copies.withLock({ $0[item.identifier] }) {
                copy.condition.lock()
                if copy.baseVersion == base { copy.baseVersion = item.version }
                copy.condition.unlock()
            }
        case .conflicted(let identifier, let original, let conflictCopy):
            if let original { cache.upsertIfKnown(original) }
            cache.upsert(conflictCopy)
            conflictCopies.withLock { _ = $0.insert(conflictCopy.identifier) }
            if let original {
                conflictedVersions.withLock { $0[conflictCopy.identifier] = SyncStatus.ConflictingVersion(original) }
            }
            // A save refused by someone's lock: the server's item names them.
            let holder = original?.lock.flatMap { $0.heldHere ? nil : $0.holderName }
            onNotice?(.conflict(path: displayPath(of: original?.identifier ?? identifier), copyName: conflictCopy.name,
                                lockedBy: holder))
        case .replaced(let former, let item):
            replace(former, by: item)
        case .rescued(let identifier, let copy, let savedAs, let reason):
            let path = displayPath(of: identifier)
            if identifier.isLocal {
                replace(identifier, by: copy)  // the new file is the rescued copy from now on
            } else {
                cache.upsert(copy)
                conflictCopies.withLock { _ = $0.insert(copy.identifier) }
            }
            onNotice?(.rescued(path: path, savedAs: savedAs, reason: reason))
        case .foldersRemade(let remade):
            // Deleted on the server, made again for a save here: shown again where they were.
            for folder in remade.folders { cache.upsert(folder) }
            cache.forgetListing(of: remade.anchor)
            if let outermost = remade.folders.first { invalidateEntry(in: remade.anchor, named: outermost.name) }
            onNotice?(.foldersRemade(path: remade.path, file: remade.file))
        case .failed:
            break  // the snapshot stays in the journal for `sitefs retry`
        case .renamed(let item, let requested):
            // Not for a file deleted here while its rename was on its way (as for uploads).
            cache.upsertIfKnown(item)
            if !ItemName.same(item.name, requested.name) { invalidateEntry(in: requested.parent, named: requested.name) }
        case .restored(_, let parent, let name):
            // A removal made offline that the server did not take: the item shows again.
            if let parent { cache.forgetListing(of: parent) }
            invalidateEntry(in: parent, named: name)
        case .removed(let identifier):
            // Dropped again, though already gone from the cache: a listing fetched while the
            // server was deleting it (asked for before, answered after) is stale for it now.
            if let gone = cache.remove(identifier) { invalidateEntry(in: gone.parent, named: gone.name) }
        case .journalTrouble(let problem):
            if let problem { onNotice?(.journalUnwritable(reason: problem)) }
        case .renameDropped(let identifier, let shown, let serverParent, let gone):
            // The server keeps it where it was: what we showed is no longer true.
            if gone { cache.remove(identifier) }
            cache.forgetListing(of: shown.parent)
            cache.forgetListing(of: serverParent)
            invalidateEntry(in: shown.parent, named: shown.name)
        }
        for identifier in event.savedCopyCandidates {
            if let copy = copies.withLock({ $0[identifier] }) {
                cleanUpIfDone(copy)
                break
            }
        }
        // A pinned file's save reached the server: its copy holds a server version again (to
        // be recorded), or it has no copy (a save restored after a restart came from staging,
        // which is gone now) and must be downloaded. The keeper's next pass does either.
        if !event.savedCopyCandidates.isEmpty, !sync.pins.pinned.isEmpty { keeper.request() }
        // The journal has let go of what this event settled (a rename applied, a new file
        // made): the metadata cache on disk must show it now, not a batch later, or a daemon
        // killed in between and mounted again offline shows the old state (the old name, no
        // new file) and a save to the real name makes a second file.
        metadata.flush()
        appliedPause.withLock { $0 }?(event)
    }

    /// What the mount knew as `former` lives on as the server item `item`: the open file and
    /// its inode follow it (`succeed(_:by:shown:)`, which says in which order, and why).
    private func replace(_ former: ItemIdentifier, by item: ProviderItem) {
        let shown = cache.item(former)
        succeed(former, by: item, shown: item)
        if item.kind.isContainer { showChildren(of: item.identifier) }  // a folder made offline: its content moves with it
        if let shown, !ItemName.same(shown.name, item.name) || shown.parent != item.parent {
            // Saved under another name or in a folder made again: the name it had shown
            // belongs to the server's file (the listing left it out while this one was
            // pending), or to nothing any more.
            if let parent = shown.parent { cache.forgetListing(of: parent) }
            invalidateEntry(in: shown.parent, named: shown.name)
        }
    }

    public func setAttributes(of inode: InodeNumber, _ changes: AttributeChanges, handle: HandleID?, context: RequestContext) throws(Errno) -> AttributesReply {
        try refuseVirtual(inode)
        guard inode != .root else { throw .permissionDenied }
        let identifier = try identifier(of: inode)
        var item = try currentItem(identifier, openThrough: handle)
        let now = Self.now()
        if changes.uid != nil || changes.gid != nil {
            try changeOwner(of: inode, uid: changes.uid, gid: changes.gid, context: context)
            localTimes.changed(identifier, now: now)
        }
        if let mode = changes.mode {
            item = try changeMode(of: item, to: mode)
        }
        if let size = changes.size {
            guard item.kind == .file else { throw item.kind == .symlink ? .invalidArgument : .isDirectory }
            guard item.capabilities.contains(.write), !configuration.readOnly else { throw .permissionDenied }
            try truncate(item, to: size, handle: handle)
            localTimes.changed(identifier, now: now)
        }
        if case .at(let time)? = changes.modificationTime {
            item = try setModificationTime(item, to: time)
            localTimes.setModification(identifier, to: time, now: now)
        } else if case .now? = changes.modificationTime {
            item = try setModificationTime(item, to: now)
            localTimes.setModification(identifier, to: now, now: now)
        }
        // atime is this mount's (the server keeps none); setting it is a change (ctime).
        switch changes.accessTime {
        case .at(let time)?: localTimes.setAccess(identifier, to: time, now: now)
        case .now?: localTimes.setAccess(identifier, to: now, now: now)
        case nil: break
        }
        return AttributesReply(attributes: attributes(of: cache.item(identifier) ?? item, inode: inode),
                               timeout: configuration.kernelCacheTimeout)
    }

    private func truncate(_ item: ProviderItem, to size: UInt64, handle: HandleID?) throws(Errno) {
        if let handle, case .local(let copy, true)? = handles.file(handle) {
            try copy.change(replacingAll: size == 0) { (descriptor) throws(Errno) in
                guard ftruncate(descriptor, off_t(size)) == 0 else { throw Errno(rawValue: errno) }
            }
            return
        }
        // truncate(2) on a path: open, cut, save, close, as a program would.
        let copy = try materialize(item, truncate: size == 0, writer: true)
        defer {
            copy.condition.lock()
            copy.handles -= 1
            copy.writers -= 1
            copy.condition.unlock()
            cleanUpIfDone(copy)
        }
        try copy.change(replacingAll: size == 0) { (descriptor) throws(Errno) in
            guard ftruncate(descriptor, off_t(size)) == 0 else { throw Errno(rawValue: errno) }
        }
        try save(copy)
    }

    private func setModificationTime(_ item: ProviderItem, to time: TimeSpec) throws(Errno) -> ProviderItem {
        let timestamp = Timestamp(microsecondsSinceEpoch: time.seconds * 1_000_000 + time.nanoseconds / 1_000)
        if item.kind == .file, let copy = copies.withLock({ $0[item.identifier] }) {
            copy.condition.lock()
            copy.waitWhileSaving()
            // With a save not yet staged, the time goes with it; with one queued or in flight,
            // it is applied after that upload (which would otherwise set the server's time).
            // A file only here keeps it on its copy until its first upload.
            let local = item.identifier.isLocal
            let pending = copy.dirty || sync.setModificationTime(timestamp, of: item.identifier) || local
            if copy.dirty || local { copy.pendingModified = timestamp }
            if pending {
                var times = [timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds)),
                             timespec(tv_sec: Int(time.seconds), tv_nsec: Int(time.nanoseconds))]
                futimens(copy.descriptor, &times)
            }
            copy.condition.unlock()
            if pending { return item }
        }
        guard item.kind != .site, item.capabilities.contains(.write) || item.capabilities.contains(.rename) else {
            throw .permissionDenied
        }
        do {
            let updated = try backend.update(item.identifier, ItemChanges(modified: timestamp), baseVersion: nil)
            cache.upsertIfKnown(sync.view(updated))  // not if deleted here meanwhile
            return updated
        } catch {
            throw handle(error, "set mtime of \(item.name)", dropping: item.identifier)
        }
    }
}

/// A swift-system call (which retries on EINTR and throws `Errno`) with its error typed.
func systemCall<Result>(_ body: () throws -> Result) throws(Errno) -> Result {
    do {
        return try body()
    } catch let error as Errno {
        throw error
    } catch {
        throw .ioError
    }
}
