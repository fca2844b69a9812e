import SitefsAPI
import SitefsDemoContent

/// Seeds the demo: user `demo` (password `demo`) and two sites with nested folders and
/// sample documents, each only if absent, so restarting with `--demo` keeps what people
/// changed.
public struct DemoSeeder {
    public static let userName = "demo"
    public static let password = "demo"

    let storage: ServerStorage

    public init(storage: ServerStorage) {
        self.storage = storage
    }

    /// Returns the names of the sites it created.
    @discardableResult
    public func seed() async throws -> [String] {
        if try await !storage.accounts.userExists(Self.userName) {
            try await storage.accounts.addUser(named: Self.userName, password: Self.password)
        }
        var created: [String] = []
        let author = Caller.administrator(Self.userName)
        for siteName in DemoContent.siteNames where try await storage.documents.site(named: siteName) == nil {
            let site = try await storage.documents.createSite(named: siteName, by: author)
            var folders: [[String]: String] = [[]: site.id]
            for file in DemoContent.site(named: siteName) {
                var parent = site.id
                for depth in 1..<file.path.count {
                    let prefix = Array(file.path.prefix(depth))
                    if let known = folders[prefix] {
                        parent = known
                    } else {
                        parent = try await storage.documents.createFolder(named: prefix[depth - 1], in: parent, by: author).id
                        folders[prefix] = parent
                    }
                }
                _ = try await storage.documents.createFile(named: file.path.last!, in: parent, bytes: file.contents, by: author)
            }
            try await storage.accounts.grant(user: Self.userName, site: siteName, readOnly: false)
            created.append(siteName)
        }
        return created
    }
}
