import SitefsHTTP
import SitefsProvider
import SitefsWebDAV

/// Modes and link targets as dead properties (`SitefsDeadProperties`, set with PROPPATCH,
/// RFC 4918 §9.2), where the server keeps them (Apache mod_dav_fs; WsgiDAV with a property
/// manager); on a server that does not (nginx dav-ext), modes are kept for this mount only,
/// with the item's identity (`IdentityTable.keep(mode:of:)`), and a link's target is its
/// file's content, as it always is.
extension WebDAVDocumentBackend {
    /// Sets `urn:sitefs:` properties on the item; true when the server kept them all, false
    /// when it keeps no dead properties (learnt once per mount, said once in the log, and not
    /// asked again). A server seen keeping them that refuses one later is an error, not a
    /// server without properties: the refusal is thrown.
    func setDeadProperties(_ values: [(name: String, value: String)], of node: IdentityTable.Node,
                           at location: IdentityTable.Location) throws(ProviderError) -> Bool {
        if propertiesKept.withLock({ $0 }) == false { return false }
        let name = location.components.last ?? ""
        let operation = "PROPPATCH \(name)"
        let body = SitefsDeadProperties.propertyUpdate(setting: values)
        let response = try sendHoldingLocks([LockedTarget(node: node, location: location)], operation) { lockHeaders throws(ProviderError) in
            try transport.send(HTTPRequest(method: .proppatch, path: location.pathForRequest(in: self.location),
                                           headers: [("Content-Type", "application/xml; charset=utf-8")] + lockHeaders, body: .bytes(body)))
        }
        let refusal: Int
        switch response.status {
        case 207:
            guard let status = try Self.propertyRefusal(response, names: values.map(\.name), operation) else {
                propertiesKept.withLock { $0 = true }
                return true
            }
            refusal = status
        case 200, 204:
            // Not the multistatus RFC 4918 asks for, but success: believed, and the next
            // listing shows whether the value is there.
            propertiesKept.withLock { $0 = true }
            return true
        default:
            refusal = response.status
        }
        // What a server without a property store answers: 403 (WsgiDAV without a property
        // manager, per property), 405 or 501 (a method it does not have), 409.
        guard [403, 405, 409, 501].contains(refusal), propertiesKept.withLock({ $0 }) != true else {
            throw WebDAVTransport.error(status: refusal, retryAfter: response.headers["Retry-After"], operation)
        }
        propertiesKept.withLock { $0 = false }
        sayOnce("noproperties", "this server keeps no properties; modes are kept on this mount only "
                + "(\(operation) answered HTTP \(refusal)); links are .rclonelink files, read for their targets")
        return false
    }

    /// The first non-2xx status the multistatus answering a PROPPATCH gives one of `names`
    /// (or the whole resource), nil when every one was set. A PROPPATCH is atomic (RFC 4918
    /// §9.2): one refusal means none was set.
    private static func propertyRefusal(_ response: HTTPResponse, names: [String], _ operation: String) throws(ProviderError) -> Int? {
        var refusal: Int?
        var answered = false
        let parser = MultistatusParser(limits: .init(responses: 16)) { entry in
            answered = true
            if let status = entry.status, !(200..<300).contains(status) { refusal = refusal ?? status }
            for name in names {
                if let status = entry.failedProperties[SitefsDeadProperties.namespace + name] { refusal = refusal ?? status }
            }
            if let failed = entry.failedProperties.values.first { refusal = refusal ?? failed }  // 424s for the others
        }
        do throws(DAVParseError) {
            try parser.feed(response.body)
            try parser.finish()
        } catch {
            throw .invalidResponse("\(operation): a malformed multistatus: \(error)")
        }
        guard answered else { throw .invalidResponse("\(operation): a multistatus without a response") }
        return refusal
    }

    /// Sets the item's permission bits: on the server as `urn:sitefs:mode`, or with the item's
    /// identity where the server keeps no properties.
    func setMode(_ mode: UInt16, of node: IdentityTable.Node, at location: IdentityTable.Location) throws(ProviderError) {
        let bits = mode & ProviderItem.permissionBits
        guard let text = SitefsDeadProperties.text(ofMode: bits) else { return }  // masked: always within range
        let kept = try setDeadProperties([(SitefsDeadProperties.mode, text)], of: node, at: location)
        try table { try identities.keep(mode: kept ? nil : bits, of: node) }
    }

    /// An item as listed, with what the mount keeps for it: the mode kept here when the
    /// server gave none. Property text that did not read as its format is said in the log
    /// (once per mount) and otherwise ignored.
    func shown(_ item: ProviderItem, named name: String, keptMode: UInt16?, _ facts: WebDAVItems.Facts) -> ProviderItem {
        if let first = facts.malformed.first {
            sayOnce("malformedproperty", "ignoring a urn:sitefs: property that does not read as its format "
                    + "(first: \(first) on \(name.debugDescription.prefix(80)))")
        }
        guard item.mode == nil, let kept = keptMode else { return item }
        var item = item
        item.mode = kept
        return item
    }

    // MARK: Symbolic links

    /// A link as rclone keeps one (`RcloneLinks`): `NAME.rclonelink` holding the target,
    /// made with `If-None-Match: *` after asking that neither it nor a plain `NAME` exists;
    /// the target also goes in `urn:sitefs:symlink-target` where the server keeps properties,
    /// so listings carry it.
    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError) -> ProviderItem {
        guard ProviderItem.isValidSymlinkTarget(target), let text = SitefsDeadProperties.text(ofTarget: target) else {
            throw .refused(status: 400, code: "invalid_target", message: "a symbolic link's target is 1 to "
                           + "\(ProviderItem.maximumSymlinkTarget) bytes without NUL")
        }
        let fileName = try RcloneLinks.fileName(ofLink: name)
        let (parentNode, parentLocation) = try resolve(parent)
        guard parentLocation.isCollection else { throw .refused(status: 0, code: "not_a_folder", message: "not a collection") }
        let link = IdentityTable.Location(components: parentLocation.components + [fileName], isCollection: false,
                                          site: parentLocation.site, parent: parentNode)
        let plain = IdentityTable.Location(components: parentLocation.components + [name], isCollection: false,
                                           site: parentLocation.site, parent: parentNode)
        let known = try table { try identities.existingNode(named: name, in: parentNode) }
        if known != nil { throw .nameTaken("\(name) exists on the server") }
        if try exists(link) { throw .nameTaken("\(name) exists on the server") }
        if try exists(plain) { throw .nameTaken("\(name) exists on the server") }
        let response = try transport.send(HTTPRequest(method: .put, path: link.pathForRequest(in: location),
                                                      headers: [("If-None-Match", "*"), ("Content-Type", "application/octet-stream")],
                                                      body: .bytes(target)))
        guard [200, 201, 204].contains(response.status) else {
            if response.status == 412 { throw .nameTaken("\(name) exists on the server") }
            if response.status == 409 { throw .notFound }
            throw WebDAVTransport.error(for: response, "PUT \(fileName)")
        }
        let node = try table { try identities.node(for: .init(name: fileName, isCollection: false), in: parentNode) }
        // The link exists now, whatever becomes of the property: a failure to set it is said,
        // not thrown (listings then read the target from the content).
        do throws(ProviderError) {
            _ = try setDeadProperties([(SitefsDeadProperties.symlinkTarget, text)], of: node, at: link)
        } catch {
            logger.warning("\(fileName.debugDescription.prefix(80)): the link's target property was not set: \(error)")
        }
        var item = try freshItem(node, at: link)
        guard item.kind == .symlink else { throw .invalidResponse("\(fileName) does not list as a link after its PUT") }
        item.symlinkTarget = target
        return item
    }

    /// The server's name for `name` given to an item whose server name is `current`: a link
    /// (`current` is a `.rclonelink` file's name) keeps the suffix; a plain file may not take
    /// one (it would list as a link).
    static func serverName(for name: String, current: String, isCollection: Bool) throws(ProviderError) -> String {
        guard !isCollection else { return name }
        if RcloneLinks.linkName(ofFile: current) != nil { return try RcloneLinks.fileName(ofLink: name) }
        try RcloneLinks.checkPlainName(name)
        return name
    }

    /// `.nameTaken` when `name` (a plain item's, or a link's shown name) would show beside
    /// the other kind of item with the same shown name in `parent`, as this backend last
    /// listed it: a plain `foo` and a link `foo` (`foo.rclonelink`) never both.
    func checkNoLinkCollision(_ name: String, isLink: Bool, in parent: IdentityTable.Node) throws(ProviderError) {
        let other = isLink ? name : name + RcloneLinks.suffix
        if try table({ try identities.existingNode(named: other, in: parent) }) != nil {
            throw .nameTaken("\(name) exists on the server (as \(isLink ? "a file or folder" : "a symbolic link"))")
        }
    }
}
