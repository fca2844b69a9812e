import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

/// Extended attributes: the document metadata the sites need and each file's sync state on
/// every item (`user.sitefs.*`, read-only), and the daemon's controls on the mount root.
/// Nothing else is stored: setting any other attribute fails with ENOTSUP rather than
/// being silently dropped.
extension SitefsFilesystem {
    /// On the mount root: the daemon's state as JSON, for `sitefs status`.
    static let statusAttribute = "user.sitefs.status"
    /// On the mount root: the same, once no upload or rename is left or after
    /// `settledStatusWait`, whichever comes first: `sitefs sync` waits with it instead of
    /// polling (every 10 ms it added 5 ms to a sync on average, and built the JSON each time).
    static let settledStatusAttribute = "user.sitefs.status.settled"
    /// Short, so the request is never long in the daemon and `sitefs sync` redraws its
    /// progress a few times a second.
    static let settledStatusWait = Duration.milliseconds(250)
    /// Reading it on the mount root re-queues failed uploads, then answers the status
    /// (`sitefs retry`).
    ///
    /// The daemon's controls are attributes it answers on *read*: the kernel lets a process
    /// set a `user.` attribute only on an inode it may write, and the mount root is 0555, so
    /// as anyone but root `setxattr` fails with EACCES before the request reaches the daemon.
    /// Reading needs only read access, which the mount's owner has; the daemon
    /// answers nobody else (`checkController`).
    static let retryControl = "user.sitefs.control.retry"
    /// Reading it on the mount root sends what waits out the settle delay now, then answers
    /// the status (`sitefs sync`).
    static let syncControl = "user.sitefs.control.sync"
    /// Reading it on the mount root tells the daemon not to wait for uploads once unmounted:
    /// what is unsent stays in the journal for the next mount (`sitefs unmount` after giving
    /// up, and `--no-wait`), so no daemon goes on sending from a cache nothing has mounted.
    static let leaveQueuedControl = "user.sitefs.control.leave-queued"
    /// The same controls as set-attributes, as clients before the read-controls sent them
    /// (they work for root only).
    static let retryAttribute = "user.sitefs.retry"
    static let syncAttribute = "user.sitefs.sync"

    /// On the mount root: the status once the pins' background work has nothing left to do
    /// for now, or after `settledStatusWait` (`sitefs sync --pinned` waits with it).
    static let pinsSettledAttribute = "user.sitefs.status.pinned"
    /// On any item: "1" when pinned itself, "folder" when a pinned folder above covers it
    /// (absent otherwise). Setting it pins, removing it unpins (as `setfattr`, which the kernel
    /// allows on items the user may write).
    static let pinnedAttribute = "user.sitefs.pinned"
    /// Read on any item, even a read-only one: pins or unpins it and answers a `PinAnswer`
    /// (`sitefs pin`, `sitefs unpin`), with the reason in it when refused.
    static let pinControl = "user.sitefs.control.pin"
    static let unpinControl = "user.sitefs.control.unpin"
    /// Read on any item: frees the space its local copies take (a folder's: everything in
    /// it), unpinning first, and answers an `EvictAnswer` (`sitefs evict`).
    static let evictControl = "user.sitefs.control.evict"

    /// On the mount root: the Unix socket on which the daemon tells state changes as JSON
    /// lines (`StateChange`), for the file manager's emblems.
    static let eventsAttribute = "user.sitefs.events"

    /// The one namespace of extended attributes this filesystem has.
    static let userNamespace = "user."

    /// The read-only ones on the mount root.
    static let rootAttributes = [statusAttribute, settledStatusAttribute, pinsSettledAttribute, syncControl, retryControl,
                                 leaveQueuedControl]

    /// Per item, in the order `listxattr` gives them.
    static let itemAttributes = ["user.sitefs.state", "user.sitefs.id", "user.sitefs.version",
                                 "user.sitefs.created_by", "user.sitefs.modified_by",
                                 "user.sitefs.created_at", "user.sitefs.modified_at"]

    /// On a file: who holds its lock for editing and since when (see `lockDescription`);
    /// listed only while it has one.
    static let lockAttribute = "user.sitefs.lock"

    /// Read on a file: its versions as JSON (`sitefs versions`).
    static let versionsControl = "user.sitefs.control.versions"
    /// Set on a file to a version's id: makes that version's content the newest version
    /// (`sitefs restore`). A set-attribute, so the kernel lets only those who may write the
    /// file ask.
    static let restoreControl = "user.sitefs.control.restore"
    /// On a file: how many versions the server keeps. Read by name only, never listed: it
    /// costs a request, and `rsync -X` or `cp -a` read every listed attribute of every file.
    static let versionCountAttribute = "user.sitefs.version_count"
    /// On a conflict copy made by this mount: the server's version its edit did not replace
    /// ("version ID of TIME by USER"), which `sitefs versions` lists on the original.
    static let conflictWithAttribute = "user.sitefs.conflict_with"

    public func getExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) -> [UInt8] {
        // Only the `user.` namespace exists here: no security labels, no POSIX ACLs. Saying
        // so (ENOTSUP, not ENODATA) matters for speed: `ls -l` asks every file for
        // security.selinux and system.posix_acl_access, two FUSE round trips per file, but
        // stops asking for the whole mount after the first ENOTSUP. Answered without
        // looking anything up.
        guard name.hasPrefix(Self.userNamespace) else { throw .notSupported }
        if VirtualNodeTable.isVirtual(inode) { return try virtualExtendedAttribute(try virtualNode(inode), name: name) }
        if inode == .root {
            switch name {
            case Self.statusAttribute:
                try checkController(context)
            case Self.settledStatusAttribute:
                try checkController(context)
                askWhetherTheServerIsBack()
                sync.settle(timeout: Self.settledStatusWait)
            case Self.syncControl:
                try checkController(context)
                sync.settle(timeout: .zero)  // due now, not waited for
                askWhetherTheServerIsBack()
            case Self.retryControl:
                try checkController(context)
                sync.retryFailed()
            case Self.leaveQueuedControl:
                try checkController(context)
                leavesUploadsQueued = true
            case Self.pinsSettledAttribute:
                try checkController(context)
                askWhetherTheServerIsBack()
                keeper.waitUntilSettled(timeout: Self.settledStatusWait)
            case Self.eventsAttribute:
                try checkController(context)
                guard let socket = configuration.stateEventSocket else { throw .noData }
                return Array(socket.utf8)
            case Self.pinControl, Self.unpinControl:
                try checkController(context)
                return Self.json(PinAnswer(path: "", pinned: false, error: "pin a site or anything in one, not the mount root"))
            case Self.evictControl:
                try checkController(context)
                return Self.json(EvictAnswer(path: "", error: "free up space in a site or anything in one, not the mount root"))
            default:
                throw .noData
            }
            return Array(statusJSON().utf8)
        }
        switch name {
        case Self.pinControl, Self.unpinControl:
            try checkController(context)
            var answer: PinAnswer
            do throws(PinRefusal) {
                answer = try name == Self.pinControl ? pin(inode) : unpin(inode)
            } catch {
                answer = PinAnswer(path: (try? displayPath(of: identifier(of: inode))) ?? "", pinned: false, error: error.message)
            }
            return Self.json(answer)
        case Self.evictControl:
            try checkController(context)
            do throws(PinRefusal) {
                return Self.json(try evict(inode).fitting(within: 60_000))
            } catch {
                return Self.json(EvictAnswer(path: (try? displayPath(of: identifier(of: inode))) ?? "", error: error.message))
            }
        case Self.pinnedAttribute:
            let identifier = try identifier(of: inode)
            guard let pin = pinCovering(identifier) else { throw .noData }
            return Array((pin == identifier ? "1" : "folder").utf8)
        case Self.lockAttribute:
            guard let description = lockDescription(of: try identifier(of: inode)) else { throw .noData }
            return Array(description.utf8)
        case Self.versionsControl:
            return try versionsAnswer(inode)
        case Self.versionCountAttribute:
            return try versionCount(inode)
        case Self.conflictWithAttribute:
            let identifier = try identifier(of: inode)
            guard let versus = conflictedVersions.withLock({ $0[identifier] }) else { throw .noData }
            return Array(versus.description.utf8)
        default:
            break
        }
        guard Self.itemAttributes.contains(name) else { throw .noData }
        let item = try currentItem(try identifier(of: inode))
        let value: String
        switch name {
        case "user.sitefs.state": value = syncState(of: item)
        case "user.sitefs.id": value = item.identifier.isLocal ? "" : item.identifier.id
        case "user.sitefs.version": value = item.version
        case "user.sitefs.created_by": value = item.createdBy
        case "user.sitefs.modified_by": value = item.modifiedBy
        case "user.sitefs.created_at": value = item.created.rfc3339
        case "user.sitefs.modified_at": value = item.modified.rfc3339
        default: throw .noData
        }
        return Array(value.utf8)
    }

    public func listExtendedAttributes(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [String] {
        if inode == .root { return [Self.statusAttribute] }
        if VirtualNodeTable.isVirtual(inode) { return [] }
        let identifier = try identifier(of: inode)
        var names = pinCovering(identifier) == nil ? Self.itemAttributes : Self.itemAttributes + [Self.pinnedAttribute]
        if lockDescription(of: identifier) != nil { names.append(Self.lockAttribute) }
        if conflictedVersions.withLock({ $0[identifier] }) != nil { names.append(Self.conflictWithAttribute) }
        return names
    }

    public func setExtendedAttribute(_ inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext) throws(Errno) {
        try refuseVirtual(inode)
        if name == Self.restoreControl, inode != .root {
            try checkController(context)
            guard (1...1024).contains(value.count), let version = String(validating: value, as: UTF8.self) else {
                throw .invalidArgument
            }
            return try restore(inode, version: version)
        }
        if inode == .root, name == Self.retryAttribute {
            try checkController(context)
            sync.retryFailed()
            return
        }
        if inode == .root, name == Self.syncAttribute {
            try checkController(context)
            sync.settle(timeout: .zero)  // due now, not waited for
            return
        }
        if name == Self.pinnedAttribute {
            try checkController(context)
            do throws(PinRefusal) {
                _ = try pin(inode)
            } catch {
                logger.warning("pin: \(error.message)")
                throw error.errno
            }
            return
        }
        if Self.itemAttributes.contains(name) || Self.rootAttributes.contains(name) || name == Self.lockAttribute
            || name == Self.conflictWithAttribute || name == Self.versionCountAttribute {
            throw .permissionDenied  // read-only
        }
        throw .notSupported
    }

    public func removeExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) {
        try refuseVirtual(inode)
        if name == Self.pinnedAttribute {
            try checkController(context)
            guard sync.pins.pinned.contains(try identifier(of: inode)) else { throw .noData }  // not pinned itself
            do throws(PinRefusal) {
                _ = try unpin(inode)
            } catch {
                throw error.errno
            }
            return
        }
        if Self.itemAttributes.contains(name) || Self.rootAttributes.contains(name) { throw .permissionDenied }
        throw .notSupported
    }

    /// `sitefs sync` waiting while offline: the server is asked now (at most once a second,
    /// as the monitor lets through), so what waits goes the moment it answers rather than at
    /// the change feed's next probe.
    private func askWhetherTheServerIsBack() {
        if isOffline { backend.probe() }
    }

    /// The daemon's status and controls are for the user who mounted (and root): with
    /// `--allow-other`, other users see the files but not the open files, uploads and
    /// failures of the owner, and cannot trigger uploads.
    private func checkController(_ context: RequestContext) throws(Errno) {
        guard context.uid == configuration.uid || context.uid == 0 else { throw .permissionDenied }
    }

    /// online-only (on the server, nothing kept here), on-device (not pinned, but a local
    /// copy is here: open, or not cleaned up yet), downloaded (pinned, and local and
    /// current), downloading (pinned, not local or not current yet), pending (saved or
    /// renamed here, waiting to be sent), uploading, conflict (a copy this mount made because
    /// the server had moved on), failed, or local (a lock or swap file that stays on this
    /// machine). A pinned folder is downloaded once everything pinned is.
    func syncState(of item: ProviderItem) -> String {
        let identifier = item.identifier
        let state = sync.state(of: identifier, reading: .queue)
        if state.hasFailed { return "failed" }
        if state.isUploading { return "uploading" }
        if state.hasPendingSave || state.hasPendingRename { return "pending" }
        if let copy = copies.withLock({ $0[identifier] }) {
            copy.condition.lock()
            let dirty = copy.dirty
            copy.condition.unlock()
            if dirty { return "pending" }
        }
        if identifier.isLocal { return SyncEngine.keepsLocal(item.name) ? "local" : "pending" }
        if conflictCopies.withLock({ $0.contains(identifier) }) { return "conflict" }
        guard pinCovering(identifier) != nil else {
            return item.kind == .file && copies.withLock({ $0[identifier] }) != nil ? "on-device" : "online-only"
        }
        guard item.kind == .file else {
            let pins = keeper.status
            return pins.settled && pins.localFiles == pins.files ? "downloaded" : "downloading"
        }
        return sync.pins.kept[identifier]?.version == item.version ? "downloaded" : "downloading"
    }

    /// What `sitefs status` shows.
    public struct MountStatus: Codable, Sendable {
        /// Names of the files open now (once each).
        public var openFiles: [String]
        public var localCopies: Int
        public var uploads: SyncStatus
        public var knownItems: Int
        /// What is pinned and how much of it is local (nil from a daemon without pins).
        public var pins: PinStatus?
        /// RFC 3339: since when the server has not been reachable; nil while it is.
        public var offlineSince: String?
        /// The locks for editing this mount holds (nil from a daemon without locks).
        public var locksHeld: [EditingLockKeeper.Held]?
        /// Others' locks this mount has seen, on documents it has listed.
        public var locksSeen: [SeenLock]?

        enum CodingKeys: String, CodingKey {
            case openFiles = "open_files"
            case localCopies = "local_copies"
            case uploads
            case knownItems = "known_items"
            case pins
            case offlineSince = "offline_since"
            case locksHeld = "locks_held"
            case locksSeen = "locks_seen"
        }
    }

    /// Someone else's lock, as `sitefs status` lists it.
    public struct SeenLock: Codable, Sendable, Equatable {
        public var path: String
        public var holder: String
        public var device: String
        public var since: String
        public var expires: String?
    }

    public var mountStatus: MountStatus {
        let open = Set(handles.openFiles.map(\.identifier)).map { cache.item($0)?.name ?? $0.description }.sorted()
        var status = MountStatus(openFiles: open, localCopies: copies.withLock { $0.count }, uploads: sync.status,
                                 knownItems: cache.itemCount, pins: keeper.status,
                                 offlineSince: backend.monitor.offlineSince?.rfc3339)
        status.locksHeld = editingLocks.held
        status.locksSeen = seenLocks.all.prefix(100).map { entry in
            SeenLock(path: displayPath(of: entry.document), holder: entry.lock.holderName, device: entry.lock.device,
                     since: entry.lock.since.rfc3339, expires: entry.lock.expires?.rfc3339)
        }
        return status
    }

    func statusJSON() -> String { String(decoding: Self.json(mountStatus), as: UTF8.self) }

    static func json(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(value))) ?? Array("{}".utf8)
    }
}
