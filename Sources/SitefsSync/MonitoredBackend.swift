import SitefsAPI
import SitefsProvider

/// The server as the mount uses it: every call goes through the `ConnectionMonitor`, which
/// refuses it at once while the server is known to be unreachable and learns from each
/// outcome whether it is. The core and the sync engine both call the server through this one
/// value, so neither has to remember to report.
public struct MonitoredBackend: DocumentBackend {
    public let base: any DocumentBackend
    public let monitor: ConnectionMonitor

    public init(_ base: any DocumentBackend, monitor: ConnectionMonitor) {
        self.base = base
        self.monitor = monitor
    }

    /// Runs `call` if the monitor admits it, and tells the monitor how it went. A call that
    /// may answer without asking the server (`countsSuccess` false: a WebDAV change feed is
    /// empty without a request) says nothing when it works.
    private func send<Value>(countsSuccess: Bool = true, _ call: () throws(ProviderError) -> Value) throws(ProviderError) -> Value {
        let admission = monitor.admit()
        if case .refuse(let error) = admission { throw error }
        do {
            let value = try call()
            monitor.finished(admission, failure: nil, countsSuccess: countsSuccess)
            return value
        } catch {
            monitor.finished(admission, failure: error)
            throw error
        }
    }

    /// Asks the server for something small, only to learn whether it answers (the change
    /// feed's round does this while offline, on backends whose feed sends no request).
    public func probe() {
        _ = try? send { () throws(ProviderError) in try base.sites(after: nil, limit: 1) }
    }

    public func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try send { () throws(ProviderError) in try base.sites(after: token, limit: limit) }
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try send { () throws(ProviderError) in try base.children(of: folder, after: token, limit: limit) }
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int,
                         nextKnown: (PageToken) -> Void) throws(ProviderError) -> Page {
        try send { () throws(ProviderError) in try base.children(of: folder, after: token, limit: limit, nextKnown: nextKnown) }
    }

    public func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in try base.item(identifier) }
    }

    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                             into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome {
        try send { () throws(ProviderError) in
            try base.fetchContent(of: file, version: version, range: range, ifNoneMatch: ifNoneMatch, into: sink,
                                  cancellation: cancellation)
        }
    }

    public func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]? {
        try send { () throws(ProviderError) in try base.thumbnail(of: file, version: version, size: size) }
    }

    public func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in try base.createFolder(named: name, in: parent) }
    }

    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError)
        -> ProviderItem {
        try send { () throws(ProviderError) in try base.createSymlink(named: name, in: parent, target: target) }
    }

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                           progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in
            try base.createFile(named: name, in: parent, contentsOf: path, modified: modified, progress: progress)
        }
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                              progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in
            try base.modifyContent(of: file, baseVersion: baseVersion, contentsOf: path, modified: modified, progress: progress)
        }
    }

    public func update(_ item: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in try base.update(item, changes, baseVersion: baseVersion) }
    }

    public func delete(_ item: ItemIdentifier, baseVersion: String?) throws(ProviderError) {
        try send { () throws(ProviderError) in try base.delete(item, baseVersion: baseVersion) }
    }

    public var searchSupport: SearchSupport { base.searchSupport }

    public func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage {
        try send { () throws(ProviderError) in try base.search(query, after: token, limit: limit) }
    }

    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        try send { () throws(ProviderError) in try base.versions(of: file) }
    }

    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try send { () throws(ProviderError) in try base.restore(file, version: version, baseVersion: baseVersion) }
    }

    /// Not a request: nothing to learn about the connection from it.
    public func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError) { try base.makeDurable(items) }

    public var lockSupport: LockSupport { base.lockSupport }

    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        try send { () throws(ProviderError) in try base.lock(file, request) }
    }

    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {
        try send { () throws(ProviderError) in try base.unlock(file) }
    }

    public func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch {
        try send(countsSuccess: false) { () throws(ProviderError) in try base.changes(since: token) }
    }

    public var waitsForChanges: Bool { base.waitsForChanges }

    public func changes(since token: PageToken?, waitingUpTo wait: Duration, cancellation: Cancellation) throws(ProviderError)
        -> ChangeBatch {
        try send(countsSuccess: false) { () throws(ProviderError) in
            try base.changes(since: token, waitingUpTo: wait, cancellation: cancellation)
        }
    }
}
