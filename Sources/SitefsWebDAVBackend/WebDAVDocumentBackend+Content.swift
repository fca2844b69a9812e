import Foundation
import SitefsAPI
import SitefsHTTP
import SitefsProvider
import SitefsWebDAV

extension WebDAVDocumentBackend {
    // MARK: Downloads

    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                             into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome {
        let (node, location) = try resolve(file)
        // Versions must read the same from a GET as from a listing: a server that lists files
        // without tags gets versions of size and time from both.
        if filesCarryTags == nil { _ = try freshItem(node, at: location) }
        let tagged = filesCarryTags ?? true
        var headers: [(String, String)] = []
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        if let ifNoneMatch {
            if let value = try tagHeader(for: ifNoneMatch, of: node) {
                headers.append(("If-None-Match", value))
            } else if let date = EntityTag.modifiedSince(for: ifNoneMatch) {
                headers.append(("If-Modified-Since", date))
            }
        }
        let window = RangeWindow(range: range, sink: sink)
        let path = location.pathForRequest(in: self.location)
        // A reader keeps the version it opened: the server refuses another (412), where it can.
        let response = try conditionally(on: version, node, location) { ifMatch throws(ProviderError) in
            var request = HTTPRequest(method: .get, path: path, headers: headers + (ifMatch.map { [("If-Match", $0)] } ?? []),
                                      appliesOverallTimeout: false)
            if cancellation.mayCancel { request.isCancelled = { cancellation.isCancelled } }
            do throws(ProviderError) {
                return try transport.send(request, into: window.responseSink)
            } catch {
                throw window.failure ?? error
            }
        }
        switch response.status {
        case 304:
            return .notModified
        case 200, 206:
            if range != nil, response.status == 200 {
                sayOnce("range", "the server ignores Range (it sends whole files): partial reads download everything")
            }
            let total = try Self.totalSize(response, range: range)
            let lastModified = response.headers["Last-Modified"].flatMap(HTTPDate.secondsSinceEpoch)
            let seconds = lastModified ?? 0
            let tag = tagged ? EntityTag.version(fromHeader: response.headers["ETag"]) : nil
            // The tag of this mount's own upload reads as the upload's version (see `UploadTag`).
            let shown = try tag.map { tag throws(ProviderError) in
                try table { try identities.shownVersion(of: node, tag: tag, size: total, seconds: lastModified) }
            }
            let fetched = shown ?? EntityTag.fallbackVersion(size: total, modifiedSeconds: seconds)
            // Where the server could not be asked to keep the version, it is checked here.
            if let version, EntityTag.header(for: version) == nil, fetched != version {
                throw .versionMismatch(current: nil)
            }
            return .fetched(version: fetched, totalSize: total)
        default:
            throw WebDAVTransport.error(for: response, "GET \(location.components.last ?? "")")
        }
    }

    /// Sends a request conditional on `version` (`If-Match`) where the server can compare it.
    /// A 412 for a version the server still has is sent once more without the condition:
    /// Apache marks a tag weak for a second after a change, and a weak tag never matches.
    /// An upload's own version whose tag no sighting has found yet is looked up first.
    func conditionally(on version: String?, _ node: IdentityTable.Node, _ location: IdentityTable.Location,
                       _ send: (_ ifMatch: String?) throws(ProviderError) -> HTTPResponse) throws(ProviderError) -> HTTPResponse {
        var header = try version.flatMap { version throws(ProviderError) in try tagHeader(for: version, of: node) }
        if header == nil, let version, UploadTag.isUploadVersion(version) {
            let current = try freshItem(node, at: location)
            guard current.version == version else { throw .versionMismatch(current: current) }
            header = try tagHeader(for: version, of: node)
        }
        let response = try send(header)
        guard response.status == 412, header != nil, let version else { return response }
        let current = try freshItem(node, at: location)
        guard current.version == version else { throw .versionMismatch(current: current) }
        return try send(nil)
    }

    /// The `If-Match` or `If-None-Match` value for `version` of `node`: the tag the server
    /// knows it by (see `UploadTag` for an upload's own version), nil where the server
    /// cannot compare it (a version of size and time, an upload whose tag is not known yet).
    func tagHeader(for version: String, of node: IdentityTable.Node) throws(ProviderError) -> String? {
        try table { try identities.wireTag(for: version, of: node) }.flatMap(EntityTag.header(for:))
    }

    /// The whole content's size: from Content-Range for 206, Content-Length otherwise.
    static func totalSize(_ response: HTTPResponse, range: ClosedRange<Int64>?) throws(ProviderError) -> Int64 {
        let total: Int64?
        if response.status == 206 {
            total = response.headers["Content-Range"].flatMap { header in
                header.lastIndex(of: "/").flatMap { Int64(header[header.index(after: $0)...].trimmingCharacters(in: .whitespaces)) }
            }
        } else {
            total = response.headers["Content-Length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? response.bodyLength
        }
        guard let total, (0...ProviderItem.maximumSize).contains(total) else {
            throw .invalidResponse("a content response without a usable size")
        }
        return total
    }

    // MARK: Uploads

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                           progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        let (parentNode, parentLocation) = try resolve(parent)
        guard parentLocation.isCollection else { throw .refused(status: 0, code: "not_a_folder", message: "not a collection") }
        // A name ending in `.rclonelink` would list as a link; a link of the name may exist.
        try RcloneLinks.checkPlainName(name)
        try checkNoLinkCollision(name, isLink: false, in: parentNode)
        let target = IdentityTable.Location(components: parentLocation.components + [name], isCollection: false,
                                            site: parentLocation.site, parent: parentNode)
        // Not every server honours If-None-Match on PUT (see README): one that lists its files
        // without an ETag (nginx) ignores it, so there an existing file is asked for first and
        // never overwritten by a create. One that tags its files evaluates the condition (RFC
        // 9110 §13.2.1), so there the PUT alone is the check: one request less per new file.
        if filesCarryTags != true, try exists(target) { throw .nameTaken("\(name) exists on the server") }
        let size = Self.size(ofFileAt: path)
        let started = ContinuousClock.now
        let response = try put(path, to: target, headers: [("If-None-Match", "*")], modified: modified, progress: progress)
        guard [200, 201, 204].contains(response.status) else {
            if response.status == 412 { throw .nameTaken("\(name) exists on the server") }
            if response.status == 409 { throw .notFound }  // the folder is gone
            // nginx answers 500 to a PUT into a folder that is gone (its rename of the body
            // fails): asked, so the save makes the folder again instead of retrying for ever.
            if response.status >= 500, try !exists(parentLocation) { throw .notFound }
            throw WebDAVTransport.error(for: response, "PUT \(name)")
        }
        if let item = try created(at: target, response: response, size: size, took: ContinuousClock.now - started, modified: modified) {
            return item
        }
        // Its node is made by the sighting of what the PUT made (one commit for both).
        return try uploaded(nil, at: target, response: response, modified: modified)
    }

    /// A new file's item from the PUT's answer alone, where the server tags its files but
    /// sent no tag with it: the upload's own version stands for the tag until a sighting
    /// finds it (see `UploadTag`). Nil where that cannot be told from the answer (it has a
    /// tag, which a PROPFIND then reads as listings do; no date; a modification time the
    /// server took, which is then not the answer's) or the file's size is not known.
    private func created(at location: IdentityTable.Location, response: HTTPResponse, size: Int64?, took elapsed: Duration,
                         modified: Timestamp?) throws(ProviderError) -> ProviderItem? {
        guard filesCarryTags == true, response.headers["ETag"] == nil, response.headers["X-OC-MTime"] == nil, let size,
              let date = response.headers["Date"].flatMap(HTTPDate.secondsSinceEpoch),
              let seconds = UploadTag.seconds(answeredAt: date, taking: elapsed),
              let name = location.components.last
        else { return nil }
        let upload = UploadTag(version: UploadTag.newVersion(), size: size, seconds: seconds)
        var seen = IdentityTable.Sighting(name: name, isCollection: false, keepModified: modified?.microseconds)
        seen.upload = upload
        let resolved = try table { try identities.nodesOfCreatedFiles([seen], in: location.parent) }[0]
        let parent = location.parent == IdentityTable.root ? nil : WebDAVItems.identifier(location.parent, site: location.site)
        let placement = WebDAVItems.Placement(node: resolved.node, site: location.site, parent: parent,
                                              keptModified: resolved.keptModified)
        return WebDAVItems.uploadedFile(named: name, size: size, version: upload.version, answeredAt: date, at: placement,
                                        mode: resolved.keptMode)
    }

    /// The size of the file an upload sends, nil when it cannot be read.
    private static func size(ofFileAt path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_size >= 0 else { return nil }
        return Int64(info.st_size)
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                              progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        let (node, location) = try resolve(file)
        var condition = baseVersion
        if let baseVersion {
            // Checked here first: nginx ignores If-Match on PUT, and a version of size and time
            // cannot be sent at all; If-Match then closes the window where the server can. A
            // tag the server marks weak just now (Apache, for a second after a change) would
            // fail If-Match whatever the content: the check stands alone then.
            let (current, weak) = try fresh(node, at: location)
            guard current.version == baseVersion else { throw .versionMismatch(current: current) }
            if weak { condition = nil }
        }
        let name = location.components.last ?? ""
        // A lock held here goes along (`If`); someone else's refuses the save (`.locked`).
        let response = try conditionally(on: condition, node, location) { ifMatch throws(ProviderError) in
            try sendHoldingLocks([LockedTarget(node: node, location: location)], "PUT \(name)") { lockHeaders throws(ProviderError) in
                try put(path, to: location, headers: (ifMatch.map { [("If-Match", $0)] } ?? []) + lockHeaders, modified: modified,
                        progress: progress)
            }
        }
        guard [200, 201, 204].contains(response.status) else {
            if response.status == 412 { throw .versionMismatch(current: try? freshItem(node, at: location)) }
            throw WebDAVTransport.error(for: response, "PUT \(name)")
        }
        return try uploaded(node, at: location, response: response, modified: modified)
    }

    /// A PUT streamed from `path` (never whole in memory), with Nextcloud's and ownCloud's
    /// `X-OC-Mtime` when a modification time is given (other servers ignore it).
    private func put(_ path: String, to location: IdentityTable.Location, headers: [(String, String)], modified: Timestamp?,
                     progress: TransferProgress?) throws(ProviderError) -> HTTPResponse {
        var headers = headers + [("Content-Type", "application/octet-stream")]
        if let modified { headers.append(("X-OC-Mtime", String(modified.timespecParts.seconds))) }
        var request = HTTPRequest(method: .put, path: location.pathForRequest(in: self.location), headers: headers,
                                  body: .file(path: path), appliesOverallTimeout: false)
        if let progress { request.onBodyProgress = { progress.update(sent: $0) } }
        return try transport.send(request)
    }

    /// The item an upload made, as the server describes it now; a modification time the
    /// server did not take is kept here for that version. `node` nil: a file just created.
    private func uploaded(_ node: IdentityTable.Node?, at location: IdentityTable.Location, response: HTTPResponse,
                          modified: Timestamp?) throws(ProviderError) -> ProviderItem {
        let taken = response.headers["X-OC-MTime"]?.lowercased() == "accepted"
        return try fresh(node, at: location, keeping: taken ? nil : modified).item
    }

    /// Whether the server has anything at `location` (a file or a collection), asked with a
    /// PROPFIND, which every server answers for both (HEAD of a collection is a 403 or a
    /// redirect on some).
    func exists(_ location: IdentityTable.Location) throws(ProviderError) -> Bool {
        do throws(WebDAVListingError) {
            return try listing.resource(at: location.components, collection: location.isCollection,
                                        headers: transport.authorizationHeaders) != nil
        } catch {
            if case .status(404, _) = error { return false }
            throw WebDAVTransport.error(for: error, "PROPFIND \(location.components.last ?? "")")
        }
    }
}

extension IdentityTable.Location {
    /// The request path of this location below the mount URL.
    func pathForRequest(in mount: WebDAVLocation) -> String {
        mount.path(of: components, collection: isCollection)
    }
}
