import SitefsAPI

/// The server as the File Provider model sees it. Calls block (they run on FUSE worker
/// threads and the uploader's threads) and each ends within the backend's timeouts.
public protocol DocumentBackend: Sendable {
    /// The root container's enumerator: sites the user may see.
    func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page
    /// A folder's enumerator.
    func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page
    /// As `children(of:after:limit:)`, telling `nextKnown` the next page's token as soon as
    /// the server has named it, before this page is decoded, where the server names it
    /// apart from the page (the project's API: a `Link` header), so the next page can be
    /// asked for meanwhile. A hint: the page's own `next` is what counts, and a server that
    /// says otherwise costs the request made early, nothing else. Not called on the last
    /// page, nor where the server does not say.
    func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int,
                  nextKnown: (PageToken) -> Void) throws(ProviderError) -> Page
    func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem

    /// Downloads content (all of it, or `range`) into `sink`: the current version, or
    /// `version` (a reader keeps the version it opened). With `ifNoneMatch` equal to the
    /// server's version, nothing is transferred and `.notModified` comes back. Once
    /// `cancellation` says so, the transfer is abandoned with `.cancelled`.
    func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                      into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome

    func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem
    /// Creates a file with the content of a local file (streamed, never whole in memory),
    /// with modification time `modified` (the server's time when nil); `progress`, when
    /// given, follows the bytes sent.
    func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                    progress: TransferProgress?) throws(ProviderError) -> ProviderItem
    /// Uploads a new version, conditional on `baseVersion` when given (412 -> versionMismatch).
    func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                       progress: TransferProgress?) throws(ProviderError) -> ProviderItem
    /// Makes a symbolic link `name` in `parent` whose target is `target` (bytes, valid by
    /// `ProviderItem.isValidSymlinkTarget`; kept as given, never followed by the server).
    /// `.refused(status: 501, code: "symlinks_unsupported", ...)` where the server cannot
    /// keep links (the mount answers EPERM, as a filesystem without them does).
    func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError) -> ProviderItem
    /// Rename, move within the site, set mtime or mode, or rename over an existing file
    /// (`replace`). A change of `mode` alone needs no lock and changes no content version.
    func update(_ item: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem
    func delete(_ item: ItemIdentifier, baseVersion: String?) throws(ProviderError)

    /// The change feed; nil starts from "now".
    func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch

    /// A PNG picture of `version` of the file that fits in a `size`×`size` box, made by the
    /// server (nothing of the content is downloaded); nil when the server has none for it
    /// (its type has no picture, or the server makes none: WebDAV). `versionMismatch` when
    /// `version` is not the current one any more.
    func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]?

    /// Whether the server locks items (see `ProviderLock`). Asked once per mount, after the
    /// first successful call; may ask the server.
    var lockSupport: LockSupport { get }

    /// Takes a lock for editing on `file`, or refreshes it when this backend holds it
    /// already (a new `timeout` from now). While held, every write this backend sends on
    /// the item carries the lock's token, so only this mount may change it.
    /// `.locked(by:)` when someone else holds it.
    func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock

    /// Releases this backend's lock on `file`. Nothing to do (no error) when it holds none,
    /// or the server had already ended it.
    func unlock(_ file: ItemIdentifier) throws(ProviderError)

    /// Whether `changes(since:waitingUpTo:cancellation:)` can hold its answer until there is
    /// a change (a long-poll), instead of answering at once.
    var waitsForChanges: Bool { get }

    /// The change feed, answered as soon as there is a change after `token`, else empty
    /// once `wait` has passed (a backend that cannot wait answers at once). `cancellation`
    /// ends the wait early (an unmount) with `ProviderError.cancelled`.
    func changes(since token: PageToken?, waitingUpTo wait: Duration, cancellation: Cancellation) throws(ProviderError)
        -> ChangeBatch

    /// Whether `search` asks the server. Asked once per mount; may ask the server.
    var searchSupport: SearchSupport { get }

    /// Items the user may see that match `query`, best first, `limit` at most per page.
    /// `.refused(status: 501, code: "search_unsupported", ...)` where the server cannot search.
    func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage

    /// A file's stored versions, newest (the current content) first.
    /// `.refused(status: 501, code: "versions_unsupported", ...)` where the server keeps none.
    func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion]

    /// Makes the content of `version` the file's newest version (the current content stays a
    /// version: nothing is destroyed), conditional on `baseVersion` when given. The item as
    /// it is afterwards.
    func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem

    /// Makes what this backend keeps on the local disk about `items` durable, where some of
    /// it is not yet (WebDAV: the number of a file just created). Called before a record
    /// that names them is made durable in a file of its own (the upload journal, the pins),
    /// so that no power cut leaves such a record naming an item the backend has forgotten.
    /// No request; cheap when there is nothing to do. `localIO` when the disk refuses.
    /// Required, so that a backend wrapping another cannot leave it out.
    func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError)
}

extension DocumentBackend {
    public var waitsForChanges: Bool { false }

    /// A server that names the next page only in the page: nothing is known early.
    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int,
                         nextKnown: (PageToken) -> Void) throws(ProviderError) -> Page {
        try children(of: folder, after: token, limit: limit)
    }

    public var lockSupport: LockSupport { .unsupported(reason: "this backend does not lock") }

    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        throw .refused(status: 501, code: "locks_unsupported", message: "this server does not lock items")
    }

    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {}

    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError)
        -> ProviderItem {
        throw .refused(status: 501, code: "symlinks_unsupported", message: "this server keeps no symbolic links")
    }

    /// Servers that make no pictures of their files (WebDAV).
    public func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]? { nil }

    public func changes(since token: PageToken?, waitingUpTo wait: Duration, cancellation: Cancellation) throws(ProviderError)
        -> ChangeBatch {
        try changes(since: token)
    }

    public var searchSupport: SearchSupport { .unsupported(reason: "this server does not search") }

    public func search(_ query: SearchQuery, after token: PageToken?, limit: Int) throws(ProviderError) -> SearchPage {
        throw .refused(status: 501, code: "search_unsupported", message: "this server does not search")
    }

    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        throw .refused(status: 501, code: "versions_unsupported", message: "this server keeps no versions")
    }

    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        throw .refused(status: 501, code: "versions_unsupported", message: "this server keeps no versions")
    }
}

public struct ItemChanges: Sendable, Equatable {
    public var name: String?
    public var parent: ItemIdentifier?
    public var modified: Timestamp?
    /// New permission bits (within `ProviderItem.permissionBits`).
    public var mode: UInt16?
    public var replaceExisting: Bool

    public init(name: String? = nil, parent: ItemIdentifier? = nil, modified: Timestamp? = nil, mode: UInt16? = nil,
                replaceExisting: Bool = false) {
        self.name = name
        self.parent = parent
        self.modified = modified
        self.mode = mode
        self.replaceExisting = replaceExisting
    }
}

/// Where downloaded bytes go.
public enum ContentSink: Sendable {
    /// Written with pwrite at `offset` + position (a local content copy). `promisedSize` is
    /// what the caller knows of the content's size (the listing's, a snapshot's): the body
    /// may be as large as the response's own Content-Length says, if the disk has room for
    /// it, and without one no larger than this. A server sending more fails the fetch, so a
    /// hostile or broken one cannot fill the disk with an endless body.
    case file(descriptor: Int32, offset: Int64, promisedSize: Int64)
    /// Handed to `receive` piece by piece as it arrives, in order, at most `limit` bytes in
    /// all (more fails the fetch): ranged reads, which serve a reader from the bytes that have
    /// come so far instead of waiting for the whole range. A piece is valid only during the
    /// call; throwing from `receive` aborts the transfer.
    case pieces(limit: Int, receive: @Sendable (UnsafeRawBufferPointer) throws -> Void)
}

public enum FetchOutcome: Sendable {
    case notModified
    /// `totalSize` is the whole content's size.
    case fetched(version: String, totalSize: Int64)
}

extension DocumentBackend {
    /// A download nobody will give up on (read-ahead, revalidation in the background, tests).
    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                             into sink: ContentSink) throws(ProviderError) -> FetchOutcome {
        try fetchContent(of: file, version: version, range: range, ifNoneMatch: ifNoneMatch, into: sink, cancellation: .never)
    }

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String) throws(ProviderError) -> ProviderItem {
        try createFile(named: name, in: parent, contentsOf: path, modified: nil, progress: nil)
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String) throws(ProviderError) -> ProviderItem {
        try modifyContent(of: file, baseVersion: baseVersion, contentsOf: path, modified: nil, progress: nil)
    }
}
