import Foundation
import SitefsAPI
import SitefsHTTP
import SitefsProvider
import Synchronization

/// The project's API v1 (see SitefsServerCore/openapi.yaml) as a `DocumentBackend`, over
/// libcurl. Every call has the client's timeouts; every response is decoded strictly and
/// validated; HTTP statuses become `ProviderError`s the filesystem maps to errnos.
public final class HTTPDocumentBackend: DocumentBackend {
    let client: HTTPClient
    let tokens: any TokenSource
    /// The locks for editing this backend took and holds (see `HTTPDocumentBackend+Locks`).
    let heldLocks = HeldLocks()
    /// Tests only: runs in every write of an item that carries lock tokens, after its tokens
    /// are chosen and before it is sent (`lockedWrite`), so a test can take a lock there.
    let writePause = Mutex<(@Sendable (ItemIdentifier) -> Void)?>(nil)

    /// `caFile`: the certificate authorities to trust for HTTPS (nil: the system's).
    public init(baseURL: String, tokens: any TokenSource, timeouts: HTTPClient.Timeouts = .default, caFile: String? = nil) {
        client = HTTPClient(baseURL: baseURL, timeouts: timeouts, caFile: caFile)
        self.tokens = tokens
    }

    // MARK: Enumeration and metadata

    public func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        let page = try json(ItemPage.self, .get, "/v1/sites" + Self.query(["limit": String(limit), "cursor": token?.rawValue]))
        return try ResponseValidation.page(page, of: nil, held: heldLocks.lockIDs())
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try children(of: folder, after: token, limit: limit, nextKnown: { _ in })
    }

    /// The server names the next page in a `Link` header too (`NextPageLink`): told before
    /// the page, often hundreds of items, is decoded.
    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int,
                         nextKnown: (PageToken) -> Void) throws(ProviderError) -> Page {
        let path = Self.itemPath(folder, "children") + Self.query(["limit": String(limit), "cursor": token?.rawValue])
        let page: ItemPage = try decodedJSON(HTTPRequest(method: .get, path: path)) { response in
            if let link = response.headers["Link"], let cursor = NextPageLink.cursor(in: link) { nextKnown(PageToken(cursor)) }
        }
        return try ResponseValidation.page(page, of: folder, held: heldLocks.lockIDs())
    }

    public func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try checked(try json(Item.self, .get, Self.itemPath(identifier)), expected: identifier)
    }

    // MARK: Content

    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                             into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome {
        var headers: [(String, String)] = []
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        if let ifNoneMatch { headers.append(("If-None-Match", "\"\(ifNoneMatch)\"")) }
        let path = Self.itemPath(file, "content") + Self.query(["version": version])
        let responseSink: ResponseSink
        var overflowed = false  // a piece sink got more than its limit
        switch sink {
        case .file(let descriptor, let offset, let promised):
            responseSink = .fileDescriptor(descriptor, offset: offset, limit: .init(promised: promised))
        case .pieces(let limit, let receive):
            var received = 0
            responseSink = .chunks { chunk in
                guard received + chunk.count <= limit else {
                    overflowed = true
                    throw CancellationError()
                }
                received += chunk.count
                try receive(chunk)
            }
        }
        let response: HTTPResponse
        do {
            var request = HTTPRequest(method: .get, path: path, headers: headers, appliesOverallTimeout: false)
            if cancellation.mayCancel { request.isCancelled = { cancellation.isCancelled } }
            response = try send(request, into: responseSink)
        } catch where overflowed {
            throw .invalidResponse("content response larger than the range asked for")
        }
        switch response.status {
        case 304:
            return .notModified
        case 200, 206:
            guard let etag = response.headers["ETag"].map(Self.unquote), !etag.isEmpty else {
                throw .invalidResponse("content response without an ETag")
            }
            let total = try Self.totalSize(response, range: range)
            if range != nil, response.status != 206 { throw .invalidResponse("a range request was answered with the whole content") }
            return .fetched(version: etag, totalSize: total)
        default:
            throw Self.error(for: response)
        }
    }

    public func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        let body = try Self.encode(NewFolder(name: name))
        return try checked(try json(Item.self, .post, Self.itemPath(parent, "children"), body: .bytes(body), json: true), parent: parent)
    }

    /// A link's target travels as JSON text: one that is not UTF-8 cannot reach this server
    /// (EINVAL on the mount, which says so in its log).
    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError) -> ProviderItem {
        guard ProviderItem.isValidSymlinkTarget(target), let text = String(validating: target, as: UTF8.self) else {
            throw .refused(status: 400, code: "invalid_target", message: "a link's target must be 1 to 4095 bytes of UTF-8 here")
        }
        let body = try Self.encode(NewFolder(name: name, symlinkTarget: text))
        return try checked(try json(Item.self, .post, Self.itemPath(parent, "children"), body: .bytes(body), json: true), parent: parent)
    }

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                           progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        let target = Self.itemPath(parent, "children") + Self.query(["name": name, "modified_at": modified?.rfc3339])
        return try checked(try json(Item.self, .post, target, body: .file(path: path), large: true, progress: progress), parent: parent)
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                              progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        let preconditions = baseVersion.map { [("If-Match", "\"\($0)\"")] } ?? []
        let target = Self.itemPath(file, "content") + Self.query(["modified_at": modified?.rfc3339])
        return try lockedWrite(of: file) { (tokens) throws(ProviderError) in
            try checked(
                try json(Item.self, .put, target, headers: preconditions + tokens, body: .file(path: path), large: true,
                         progress: progress),
                expected: file)
        }
    }

    public func update(_ item: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        if let parent = changes.parent, parent.site != item.site { throw .crossSite }
        let patch = ItemPatch(name: changes.name, parentID: changes.parent?.id, modifiedAt: changes.modified,
                              replace: changes.replaceExisting ? true : nil,
                              mode: changes.mode.map { Int($0 & ProviderItem.permissionBits) })
        // A rename-over may replace a file this backend locked, whose id it does not know here.
        let preconditions = baseVersion.map { [("If-Match", "\"\($0)\"")] } ?? []
        let body = try Self.encode(patch)
        let result = try lockedWrite(of: item, wholeSite: changes.replaceExisting,
                                     forgetsRefusedLock: !changes.replaceExisting) { (tokens) throws(ProviderError) in
            try json(Item.self, .patch, Self.itemPath(item), headers: preconditions + tokens, body: .bytes(body), json: true)
        }
        let converted = try ResponseValidation.providerItem(result, held: heldLocks.lockIDs())
        // With `replace`, the destination's id survives; otherwise it must be the same item.
        guard converted.identifier.site == item.site, changes.replaceExisting || converted.identifier == item else {
            throw .invalidResponse("PATCH of \(item) answered with item \(converted.identifier)")
        }
        return converted
    }

    public func delete(_ item: ItemIdentifier, baseVersion: String?) throws(ProviderError) {
        // A folder's deletion reaches the files in it, which this backend may have locked.
        let preconditions = baseVersion.map { [("If-Match", "\"\($0)\"")] } ?? []
        try lockedWrite(of: item, wholeSite: true, forgetsRefusedLock: false) { (tokens) throws(ProviderError) in
            let response = try send(HTTPRequest(method: .delete, path: Self.itemPath(item), headers: preconditions + tokens))
            guard response.status == 204 || response.status == 200 else { throw Self.error(for: response) }
        }
    }

    /// The server names its items: nothing this backend keeps on the disk names them.
    public func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError) {}

    public func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch {
        try changes(since: token, waitingUpTo: .zero, cancellation: .never)
    }

    /// sitefs-server answers `GET /v1/changes?wait=S` as soon as the caller has a change.
    public var waitsForChanges: Bool { true }

    /// Longest wait asked of the server (it refuses more than `ChangeFeedWait.maximumSeconds`).
    public static let longestChangeWait = 25

    public func changes(since token: PageToken?, waitingUpTo wait: Duration, cancellation: Cancellation) throws(ProviderError)
        -> ChangeBatch {
        // Whole seconds, and only with a cursor: without one the server answers at once.
        let seconds = token == nil ? 0 : min(max(Int(wait.components.seconds), 0), Self.longestChangeWait)
        var request = HTTPRequest(method: .get, path: "/v1/changes" + Self.query(
            ["cursor": token?.rawValue, "wait": seconds > 0 ? String(seconds) : nil]))
        request.expectedWait = .seconds(seconds)
        if cancellation.mayCancel { request.isCancelled = { cancellation.isCancelled } }
        let page: ChangePage = try decodedJSON(request)
        var changes: [ChangeBatch.Change] = []
        var refused: [String] = []
        let held = heldLocks.lockIDs()
        for change in page.changes {
            switch change {
            case .item(let item):
                // One bad item is reported and skipped; the rest of the feed still applies.
                do throws(ProviderError) {
                    changes.append(.updated(try ResponseValidation.providerItem(item, held: held, notes: &refused)))
                } catch {
                    refused.append(error.description)
                }
            case .deleted(let id, let siteID):
                changes.append(.deleted(ItemIdentifier(site: siteID, id: id)))
            }
        }
        guard !page.nextCursor.isEmpty, page.nextCursor.utf8.count <= ResponseValidation.maximumCursorLength else {
            throw .invalidResponse("unusable change cursor (\(page.nextCursor.utf8.count) bytes)")
        }
        return ChangeBatch(changes: changes, next: PageToken(page.nextCursor), hasMore: page.hasMore, refused: refused)
    }

    // MARK: Sign-in (used by `sitefs login` / `logout`)

    /// Exchanges a password for a session token.
    public static func signIn(baseURL: String, username: String, password: String,
                              timeouts: HTTPClient.Timeouts = .default, caFile: String? = nil) throws(ProviderError) -> SessionGrant {
        let backend = HTTPDocumentBackend(baseURL: baseURL, tokens: FixedToken(nil), timeouts: timeouts, caFile: caFile)
        let body = try encode(SessionRequest(username: username, password: password))
        return try backend.json(SessionGrant.self, .post, "/v1/session", body: .bytes(body), json: true)
    }

    /// Revokes the token in use.
    public func signOut() throws(ProviderError) {
        let response = try send(HTTPRequest(method: .delete, path: "/v1/session"))
        guard response.status == 204 else { throw Self.error(for: response) }
    }
}
