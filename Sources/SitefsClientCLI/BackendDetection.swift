import ArgumentParser
import Foundation
import SitefsHTTP
import SitefsWebDAVBackend

/// What a server speaks: the project's API, or WebDAV.
enum BackendKind: String, Codable, Sendable, CaseIterable, ExpressibleByArgument {
    case sitefs, webdav
}

/// Which backend a server is, for `sitefs login` without `--backend`: the project's API
/// (`GET /v1/sites` answers with its JSON, even unauthenticated), else a server whose
/// `OPTIONS` answer carries a `DAV:` header naming class 1, 2 or 3 (RFC 4918 §10.1).
enum BackendDetection {
    static func detect(_ server: String, authorization: String?, caFile: String?) throws -> BackendKind {
        let client = HTTPClient(baseURL: server, timeouts: .init(connect: .seconds(10), overall: .seconds(20)), caFile: caFile)
        var reasons: [String] = []
        do {
            let response = try client.send(HTTPRequest(method: .get, path: "/v1/sites"))
            let json = response.headers["Content-Type"]?.lowercased().hasPrefix("application/json") == true
            let body = String(decoding: response.body.prefix(4096), as: UTF8.self)
            if json, (response.status == 401 && body.contains("\"error\"")) || (response.status == 200 && body.contains("\"items\"")) {
                return .sitefs
            }
            reasons.append("GET /v1/sites: HTTP \(response.status)")
        } catch {
            reasons.append("GET /v1/sites: \(error)")
        }
        guard let location = WebDAVLocation(server) else { throw UserFacingError("\(server) is not a usable server URL") }
        var request = HTTPRequest(method: .options, path: location.basePath)
        if let authorization { request.headers.append(("Authorization", authorization)) }
        let response: HTTPResponse
        do {
            response = try HTTPClient(baseURL: location.origin, timeouts: client.timeouts, caFile: caFile).send(request)
        } catch {
            throw UserFacingError("cannot reach \(server): \(error)")
        }
        // Class 2 and 3 imply 1 (RFC 4918 §18.2), and nginx dav-ext with locks names only 2.
        let classes = response.headers.values(for: "DAV").joined(separator: ",").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if classes.contains(where: { ["1", "2", "3"].contains($0) }) { return .webdav }
        if response.status == 401 { throw UserFacingError("sign-in to \(server) failed: wrong user name or password (HTTP 401)") }
        reasons.append("OPTIONS: HTTP \(response.status) without a DAV: header")
        throw UserFacingError("\(server) is neither a sitefs server nor a WebDAV server (\(reasons.joined(separator: "; "))); "
                              + "pass --backend to say which")
    }
}
