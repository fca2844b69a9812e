import Foundation
import HTTPTypes
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

/// A known path asked with a method it does not answer is 405 with `Allow`; an unknown path
/// is 404 (schemathesis found TRACE answered 404).
@Suite struct MethodNotAllowedTests {
    static let paths = ["/v1/session", "/v1/sites", "/v1/changes", "/v1/search", "/v1/items/7", "/v1/items/7/children",
                        "/v1/items/7/versions", "/v1/items/7/versions/abc/restore", "/v1/items/7/content",
                        "/v1/items/7/thumbnail", "/v1/items/7/lock"]
    static let methods: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete, .trace, .options]

    /// Every method of every path either reaches a route (anything but 404/405: without a
    /// token most are 401) or is 405 naming the methods that do: the table and the router agree.
    @Test func theAllowTableMatchesTheRouter() async throws {
        let env = try TestEnvironment()
        try await env.withRouter { client in
            for path in Self.paths {
                let allowed = try #require(AllowedMethods.methods(for: path))
                for method in Self.methods {
                    let response = try await client.execute(uri: path, method: method)
                    if allowed.contains(method) {
                        #expect(response.status != .notFound && response.status != .methodNotAllowed, "\(method) \(path): \(response.status)")
                    } else {
                        #expect(response.status == .methodNotAllowed, "\(method) \(path): \(response.status)")
                        #expect(response.headers[.allow] == allowed.map(\.rawValue).joined(separator: ", "))
                    }
                }
            }
            #expect(try await client.execute(uri: "/v1/nothing", method: .get).status == .notFound)
            #expect(try await client.execute(uri: "/v1/items/7/nothing", method: .trace).status == .notFound)
        }
    }
}
