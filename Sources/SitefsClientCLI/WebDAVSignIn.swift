import Foundation
import Logging
import SitefsHTTP
import SitefsProvider
import SitefsWebDAVBackend

/// Checks WebDAV credentials at `sitefs login`: the mount URL's collection must answer a
/// PROPFIND with them. Basic auth has no session to create, so this is the whole sign-in.
enum WebDAVSignIn {
    static func check(_ server: String, authorization: String?, caFile: String?) throws {
        guard let location = WebDAVLocation(server) else { throw UserFacingError("\(server) is not a usable WebDAV URL") }
        let listing = WebDAVListing(client: HTTPClient(baseURL: location.origin, caFile: caFile), basePath: location.basePath,
                                    origin: location.origin)
        do {
            guard try listing.resource(at: [], collection: true, headers: authorization.map { [("Authorization", $0)] } ?? []) != nil
            else { throw UserFacingError("\(server) answered, but not for its own collection") }
        } catch let error as WebDAVListingError {
            if case .status(401, _) = error { throw UserFacingError("sign-in to \(server) failed: wrong user name or password") }
            if case .status(let status, _) = error { throw UserFacingError("sign-in to \(server) failed: PROPFIND answered HTTP \(status)") }
            throw UserFacingError("sign-in to \(server) failed: \(error)")
        }
    }
}
