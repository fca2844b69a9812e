import Foundation
import SitefsAPI
import SitefsProvider

/// The server as the mount shows it with others' locks: beside every file someone else
/// holds a lock on, a read-only `.~lock.NAME#` whose content is LibreOffice's lock record
/// naming the holder (`OfficeLockFile`). So LibreOffice on this mount opens a document
/// locked elsewhere read-only and says by whom, as on a shared drive, and any program or
/// person sees the lock by listing the folder.
///
/// A decorator under the connection monitor: the core lists, looks up, stats and reads the
/// lock files like server files, and the change feed adds and removes them as locks come
/// and go. Every item passing through is recorded in `seen` (`SeenLocks`). A lock file's
/// identifier is `ItemIdentifier.lockFile(of:)` its document; nothing about it reaches the
/// server except asking for the document. A lock this mount holds shows none (the program
/// that asked for it made its own, which stays on this machine: `LocalOnlyNames`).
public struct LockFileBackend: DocumentBackend {
    public let base: any DocumentBackend
    public let seen: SeenLocks
    /// The time zone the lock records' times are written in (the machine's).
    let timeZone: TimeZone

    public init(_ base: any DocumentBackend, seen: SeenLocks, timeZone: TimeZone = .current) {
        self.base = base
        self.seen = seen
        self.timeZone = timeZone
    }

    /// The lock file shown beside `document`, nil when it has no lock of someone else's (or
    /// its lock file's name would be too long).
    public func lockFileItem(for document: ProviderItem) -> ProviderItem? {
        guard document.kind == .file, let lock = document.lock, !lock.heldHere, !seen.isOwn(document.identifier),
              let name = OfficeLockFile.name(for: document.name) else { return nil }
        return Self.item(named: name, beside: document.identifier, in: document.parent, lock: lock, timeZone: timeZone)
    }

    static func item(named name: String, beside document: ItemIdentifier, in parent: ItemIdentifier?, lock: ProviderLock,
                     timeZone: TimeZone) -> ProviderItem {
        let content = OfficeLockFile.content(for: lock, timeZone: timeZone)
        return ProviderItem(identifier: .lockFile(of: document), parent: parent, name: name, kind: .file,
                            size: Int64(content.count), created: lock.since, modified: lock.since,
                            createdBy: lock.holderName, modifiedBy: lock.holderName, version: Self.version(of: content),
                            capabilities: [.read])
    }

    /// A version that changes with the record (FNV-1a of its bytes: an identity for caching,
    /// not a secret).
    static func version(of content: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in content {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "lock-" + String(hash, radix: 16)
    }

    /// A server item as shown: recorded in `seen`, with its lock file after it when it has
    /// one. A server item whose id looks like a lock file's is left out.
    private func shown(_ items: [ProviderItem], refused: inout [String]) -> [ProviderItem] {
        var shown: [ProviderItem] = []
        shown.reserveCapacity(items.count)
        for item in items {
            guard item.identifier.lockedDocument == nil else {
                refused.append("\(item.name.debugDescription): its id \(item.identifier.id.debugDescription) is one the mount reserves")
                continue
            }
            seen.observe(item)
            shown.append(item)
            if let lockFile = lockFileItem(for: item) { shown.append(lockFile) }
        }
        return shown
    }

    private static func refuseWrite(_ identifier: ItemIdentifier) throws(ProviderError) {
        if identifier.lockedDocument != nil {
            throw .forbidden("a lock file shown for someone else's lock is read-only; it goes when they close the document")
        }
    }

    // MARK: Enumeration and metadata

    public func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try base.sites(after: token, limit: limit)
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        var page = try base.children(of: folder, after: token, limit: limit)
        page.items = shown(page.items, refused: &page.refused)
        return page
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int,
                         nextKnown: (PageToken) -> Void) throws(ProviderError) -> Page {
        var page = try base.children(of: folder, after: token, limit: limit, nextKnown: nextKnown)
        page.items = shown(page.items, refused: &page.refused)
        return page
    }

    public func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        if let document = identifier.lockedDocument {
            let item = try base.item(document)
            seen.observe(item)
            guard let lockFile = lockFileItem(for: item) else { throw .notFound }
            return lockFile
        }
        let item = try base.item(identifier)
        seen.observe(item)
        return item
    }

    // MARK: Content

    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                             into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome {
        guard let document = file.lockedDocument else {
            return try base.fetchContent(of: file, version: version, range: range, ifNoneMatch: ifNoneMatch, into: sink,
                                         cancellation: cancellation)
        }
        // What the mount last saw: a released lock's file is gone from listings by now.
        guard let entry = seen.lock(of: document) else { throw .notFound }
        // Someone here is reading the holder's record (LibreOffice asking who has it): they
        // will want to hear when it is free.
        seen.watch(document)
        let content = OfficeLockFile.content(for: entry.lock, timeZone: timeZone)
        let current = Self.version(of: content)
        if let version, version != current { throw .versionMismatch(current: nil) }
        if ifNoneMatch == current { return .notModified }
        let total = Int64(content.count)
        let wanted: Range<Int>
        if let range {
            guard range.lowerBound >= 0, range.lowerBound < total else {
                throw .refused(status: 416, code: "range_not_satisfiable", message: "the range is past the lock file's end")
            }
            wanted = Int(range.lowerBound)..<Int(min(range.upperBound, total - 1)) + 1
        } else {
            wanted = 0..<content.count
        }
        let bytes = Array(content[wanted])
        switch sink {
        case .file(let descriptor, let offset, _):
            let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == bytes.count else { throw .localIO("writing a lock file's record: \(String(cString: strerror(errno)))") }
        case .pieces(let limit, let receive):
            guard bytes.count <= limit else { throw .invalidResponse("a lock file's record is larger than the range asked for") }
            do { try bytes.withUnsafeBytes { try receive($0) } } catch { throw .cancelled }
        }
        return .fetched(version: current, totalSize: total)
    }

    public func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]? {
        if file.lockedDocument != nil { return nil }
        return try base.thumbnail(of: file, version: version, size: size)
    }

    // MARK: Changes

    public func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try base.createFolder(named: name, in: parent)
    }

    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError)
        -> ProviderItem {
        try base.createSymlink(named: name, in: parent, target: target)
    }

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                           progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try base.createFile(named: name, in: parent, contentsOf: path, modified: modified, progress: progress)
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                              progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try Self.refuseWrite(file)
        return try base.modifyContent(of: file, baseVersion: baseVersion, contentsOf: path, modified: modified, progress: progress)
    }

    public func update(_ item: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try Self.refuseWrite(item)
        return try base.update(item, changes, baseVersion: baseVersion)
    }

    public func delete(_ item: ItemIdentifier, baseVersion: String?) throws(ProviderError) {
        try Self.refuseWrite(item)
        try base.delete(item, baseVersion: baseVersion)
    }

    // MARK: Search and versions

    public var searchSupport: SearchSupport { base.searchSupport }

    public func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage {
        try base.search(query, after: token, limit: limit)
    }

    /// A lock file is made here and has no versions.
    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        if file.lockedDocument != nil { throw .refused(status: 400, code: "not_a_file", message: "a lock file keeps no versions") }
        return try base.versions(of: file)
    }

    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try Self.refuseWrite(file)
        return try base.restore(file, version: version, baseVersion: baseVersion)
    }

    public func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError) { try base.makeDurable(items) }

    // MARK: Locks

    public var lockSupport: LockSupport { base.lockSupport }

    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        try Self.refuseWrite(file)
        return try base.lock(file, request)
    }

    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {
        try base.unlock(file)
    }

    // MARK: The change feed

    public func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch {
        shown(try base.changes(since: token))
    }

    public var waitsForChanges: Bool { base.waitsForChanges }

    public func changes(since token: PageToken?, waitingUpTo wait: Duration, cancellation: Cancellation) throws(ProviderError)
        -> ChangeBatch {
        shown(try base.changes(since: token, waitingUpTo: wait, cancellation: cancellation))
    }

    /// A batch as shown: a report of a file brings its lock file with it, or the removal of
    /// the one shown before; a deleted file takes its lock file along.
    private func shown(_ batch: ChangeBatch) -> ChangeBatch {
        var batch = batch
        var changes: [ChangeBatch.Change] = []
        changes.reserveCapacity(batch.changes.count)
        for change in batch.changes {
            switch change {
            case .updated(let item):
                guard item.identifier.lockedDocument == nil else {
                    batch.refused.append("a report of \(item.name.debugDescription) has an id the mount reserves")
                    continue
                }
                changes.append(change)
                let before = seen.observe(item)
                if let lockFile = lockFileItem(for: item) {
                    changes.append(.updated(lockFile))
                } else if before != nil {
                    changes.append(.deleted(.lockFile(of: item.identifier)))
                }
            case .deleted(let identifier):
                changes.append(change)
                if seen.forget(identifier) != nil { changes.append(.deleted(.lockFile(of: identifier))) }
            }
        }
        batch.changes = changes
        return batch
    }
}
