import Hummingbird

/// The methods each path of API v1 answers, for `405 Method Not Allowed` with `Allow` when a
/// known path is asked with another one (not `404 no such endpoint`, which would say the
/// path does not exist). Kept beside `DocumentServer.router`, which registers the same
/// routes; `MethodNotAllowedTests` checks the two agree.
enum AllowedMethods {
    private static let table: [(pattern: [String], methods: [HTTPRequest.Method])] = [
        (["v1", "session"], [.post, .delete]),
        (["v1", "sites"], [.get]),
        (["v1", "changes"], [.get]),
        (["v1", "search"], [.get]),
        (["v1", "items", ":id"], [.get, .patch, .delete]),
        (["v1", "items", ":id", "children"], [.get, .post]),
        (["v1", "items", ":id", "versions"], [.get]),
        (["v1", "items", ":id", "versions", ":etag", "restore"], [.post]),
        (["v1", "items", ":id", "content"], [.get, .put]),
        (["v1", "items", ":id", "thumbnail"], [.get]),
        (["v1", "items", ":id", "lock"], [.put, .delete]),
    ]

    /// The methods `path` answers, or nil for a path the API does not have.
    static func methods(for path: String) -> [HTTPRequest.Method]? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        return table.first { entry in
            entry.pattern.count == components.count
                && zip(entry.pattern, components).allSatisfy { pattern, component in pattern.hasPrefix(":") || pattern == component }
        }?.methods
    }
}
