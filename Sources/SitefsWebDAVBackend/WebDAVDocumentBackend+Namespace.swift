import SitefsAPI
import SitefsHTTP
import SitefsProvider

extension WebDAVDocumentBackend {
    public func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        let (parentNode, parentLocation) = try resolve(parent)
        guard parentLocation.isCollection else { throw .refused(status: 0, code: "not_a_folder", message: "not a collection") }
        try checkNoLinkCollision(name, isLink: false, in: parentNode)
        let target = IdentityTable.Location(components: parentLocation.components + [name], isCollection: true,
                                            site: parentLocation.site, parent: parentNode)
        let response = try transport.send(HTTPRequest(method: .mkcol, path: target.pathForRequest(in: location)))
        switch response.status {
        case 201, 200, 204: break
        case 405: throw .nameTaken("\(name) exists on the server")  // RFC 4918 §9.3.1
        case 409: throw .notFound  // the parent is gone
        default: throw WebDAVTransport.error(for: response, "MKCOL \(name)")
        }
        let node = try table { try identities.node(for: .init(name: name, isCollection: true), in: parentNode) }
        return try freshItem(node, at: target)
    }

    /// Rename and move (MOVE, RFC 4918 §9.9), within a site; a new modification time is kept
    /// here (WebDAV servers protect `getlastmodified`: Apache, nginx and WsgiDAV refuse a
    /// PROPPATCH of it). With `replaceExisting`, the item moves over what has the name, and
    /// the result keeps the replaced item's identity, as the project's API does: an editor's
    /// save by rename stays the same document. A link's file keeps its `.rclonelink` suffix
    /// through a rename (`name` is the link's shown name); a rename onto the shown name of the
    /// other kind (a link onto a plain `foo`, a plain item onto a link `foo`) is `.nameTaken`,
    /// replacing or not. A `mode` is set after any move (see `setMode`).
    public func update(_ item: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        let (node, location) = try resolve(item)
        // A chmod alone is no rename: a site (or a file at the root) may have its mode set.
        let modeOnly = changes.name == nil && changes.parent == nil && changes.modified == nil && changes.mode != nil
        guard location.parent != IdentityTable.root || modeOnly else { throw .forbidden("sites are the server's folders: not renamed here") }
        var targetParent = location.parent
        var targetComponents = Array(location.components.dropLast())
        if let parent = changes.parent {
            guard parent.site == item.site else { throw .crossSite }
            let (parentNode, parentLocation) = try resolve(parent)
            guard parentLocation.isCollection else { throw .refused(status: 0, code: "not_a_folder", message: "not a collection") }
            targetParent = parentNode
            targetComponents = parentLocation.components
        }
        let current = location.components.last ?? ""
        let name = try changes.name.map { name throws(ProviderError) in
            try Self.serverName(for: name, current: current, isCollection: location.isCollection)
        } ?? current
        let isLink = !location.isCollection && RcloneLinks.linkName(ofFile: current) != nil
        var result = node
        var resultLocation = location
        if targetParent != location.parent || !ItemName.same(name, current) {
            try checkNoLinkCollision(isLink ? RcloneLinks.linkName(ofFile: name) ?? name : name, isLink: isLink, in: targetParent)
            let target = IdentityTable.Location(components: targetComponents + [name], isCollection: location.isCollection,
                                                site: location.site, parent: targetParent)
            let replaced = try table { try identities.existingNode(named: name, in: targetParent) }
            // The tokens of locks held here on the item and, moving over it, on the file it
            // replaces (the editor's save by rename of a file it locked).
            var touched = [LockedTarget(node: node, location: location)]
            if changes.replaceExisting, let replaced, replaced != node {
                touched.append(LockedTarget(node: replaced, location: target))
            }
            try move(location, to: target, replacing: changes.replaceExisting, touching: touched)
            // RFC 4918 §7.7: a lock stays with its URL, not with the resource that moved away.
            heldLocks.dropAll(node)
            if changes.replaceExisting, let replaced, replaced != node {
                // The item that moved keeps its mode kept here (rename(2) replaces the other).
                let mode = try table { try identities.keptMode(of: node) }
                try table {
                    try identities.remove(node)
                    _ = try identities.node(for: .init(name: name, isCollection: location.isCollection), in: targetParent)
                    try identities.keep(mode: mode, of: replaced)
                }
                result = replaced
            } else {
                try table { try identities.move(node, to: targetParent, name: name) }
            }
            resultLocation = target
        }
        if let mode = changes.mode { try setMode(mode, of: result, at: resultLocation) }
        var fresh = try freshItem(result, at: resultLocation)
        if let modified = changes.modified {
            try table { try identities.keep(modified: modified.microseconds, of: result, version: fresh.version) }
            fresh.modified = modified
            fresh.created = modified
        }
        return fresh
    }

    private func move(_ source: IdentityTable.Location, to target: IdentityTable.Location, replacing: Bool,
                      touching touched: [LockedTarget]) throws(ProviderError) {
        if !replacing, try exists(target) {
            // Asked first: not every server honours `Overwrite: F` (see README).
            throw .nameTaken("\(target.components.last ?? "") exists on the server")
        }
        let headers = [("Destination", location.url(of: target.pathForRequest(in: location))), ("Overwrite", replacing ? "T" : "F")]
        let response = try sendHoldingLocks(touched, "MOVE \(source.components.last ?? "")", tagged: true) { lockHeaders throws(ProviderError) in
            try transport.send(HTTPRequest(method: .move, path: source.pathForRequest(in: location), headers: headers + lockHeaders))
        }
        switch response.status {
        case 201, 204, 200: return
        case 207: throw transport.multistatusFailure(response, "MOVE \(source.components.last ?? "")")
        case 412: throw .nameTaken("\(target.components.last ?? "") exists on the server")  // Overwrite: F
        case 409: throw .notFound  // the target folder is gone
        default: throw WebDAVTransport.error(for: response, "MOVE \(source.components.last ?? "")")
        }
    }

    public func delete(_ item: ItemIdentifier, baseVersion: String?) throws(ProviderError) {
        let (node, location) = try resolve(item)
        guard location.parent != IdentityTable.root else { throw .forbidden("sites are the server's folders: not deleted here") }
        let path = location.pathForRequest(in: self.location)
        let response = try conditionally(on: location.isCollection ? nil : baseVersion, node, location) { ifMatch throws(ProviderError) in
            // Tagged: Apache checks an untagged list against the parent folder too, and refuses.
            try sendHoldingLocks([LockedTarget(node: node, location: location)], "DELETE \(location.components.last ?? "")", tagged: true) {
                lockHeaders throws(ProviderError) in
                try transport.send(HTTPRequest(method: .delete, path: path, headers: (ifMatch.map { [("If-Match", $0)] } ?? []) + lockHeaders))
            }
        }
        switch response.status {
        case 200, 204: break
        case 207: throw transport.multistatusFailure(response, "DELETE \(location.components.last ?? "")")
        case 404, 410:
            heldLocks.dropAll(node)
            try table { try identities.remove(node) }
            throw .notFound
        case 412: throw .versionMismatch(current: try? freshItem(node, at: location))
        default: throw WebDAVTransport.error(for: response, "DELETE \(location.components.last ?? "")")
        }
        heldLocks.dropAll(node)  // the lock went with the resource
        try table { try identities.remove(node) }
    }
}
