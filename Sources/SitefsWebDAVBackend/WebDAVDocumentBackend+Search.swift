import SitefsHTTP
import SitefsProvider

/// Search and versions on a WebDAV server: neither is used.
///
/// Search (RFC 5323, `SEARCH` with `DAV:basicsearch`) is announced by a `DASL` header in
/// the answer to OPTIONS. None of the servers tested has it: WsgiDAV 4.4, Apache 2.4
/// mod_dav_fs and nginx dav-ext answer OPTIONS without `DASL` and `SEARCH` with 405 (see
/// README.md). So `search` stays the protocol's refusal and the mount searches names over
/// the folders it has listed itself; `searchSupport` says why, in the server's own terms.
///
/// Versions: a WebDAV server keeps one content per file (DeltaV, RFC 3253, is rare and none
/// tested has it), so `versions` and `restore` are refused as `versions_unsupported`.
extension WebDAVDocumentBackend {
    /// Asked once, with OPTIONS on the mount URL. Always `.unsupported`: the reason says
    /// whether the server announced a search grammar this backend does not use, or none. A
    /// failure to ask is not remembered (the next caller asks again).
    public var searchSupport: SearchSupport {
        if let known = searchSupportFound.withLock({ $0 }) { return known }
        let response: HTTPResponse
        do throws(ProviderError) {
            response = try transport.send(HTTPRequest(method: .options, path: location.basePath))
        } catch {
            return .unsupported(reason: "this WebDAV server was not asked whether it searches (OPTIONS failed: \(error))")
        }
        guard (200..<300).contains(response.status) else {
            return .unsupported(reason: "this WebDAV server was not asked whether it searches (OPTIONS answered HTTP \(response.status))")
        }
        let found = SearchSupport.unsupported(reason: Self.searchReason(dasl: response.headers.values(for: "DASL")))
        return searchSupportFound.withLock { known in
            if known == nil { known = found }
            return known ?? found
        }
    }

    /// Why this mount does not ask the server to search, from its `DASL` headers.
    static func searchReason(dasl: [String]) -> String {
        let grammars = dasl.joined(separator: ", ")
        guard !grammars.trimmingASCIIWhitespace.isEmpty else {
            return "this WebDAV server does not search (its OPTIONS answer announces no DASL search grammar)"
        }
        return "this WebDAV server announces WebDAV SEARCH (DASL \(LockWire.clean(grammars).debugDescription)), which sitefs does not use yet"
    }

    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        throw Self.noVersions
    }

    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        throw Self.noVersions
    }

    static let noVersions = ProviderError.refused(
        status: 501, code: "versions_unsupported",
        message: "this WebDAV server keeps no versions: a file has only its current content, so there is nothing to list or restore")
}
