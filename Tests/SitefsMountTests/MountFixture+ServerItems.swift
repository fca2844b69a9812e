import Foundation
import SitefsAPI
import Testing

/// Items made on the server through its API, as another user's uploads would be.
extension MountFixture {
    private static let nameCharacters = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: ".-_"))

    /// A folder made on the server in the folder at `parent` (a mount-relative path).
    @discardableResult
    func serverFolder(_ name: String, in parent: String) throws -> Item {
        let folder = try #require(try serverItem(parent), "no \(parent) on the server")
        let created = try api.call("POST", "/v1/items/\(folder.id)/children", json: String(decoding: try JSONEncoder().encode(NewFolder(name: name)), as: UTF8.self))
        try #require(created.status == 201, "mkdir \(parent)/\(name): \(created.status) \(created.body)")
        return try JSONDecoder().decode(Item.self, from: Data(created.body.utf8))
    }

    /// A file made on the server in the folder at `parent`.
    @discardableResult
    func serverFile(_ name: String, _ bytes: Data, in parent: String) throws -> Item {
        let folder = try #require(try serverItem(parent), "no \(parent) on the server")
        let local = mount.root.appendingPathComponent("upload-\(UUID().uuidString)")
        try bytes.write(to: local)
        defer { try? FileManager.default.removeItem(at: local) }
        let created = try api.call("POST", "/v1/items/\(folder.id)/children?name=\(name.addingPercentEncoding(withAllowedCharacters: Self.nameCharacters)!)",
                                   extra: ["-H", "Expect:", "--data-binary", "@\(local.path)"])
        try #require(created.status == 201, "create \(parent)/\(name): \(created.status) \(created.body)")
        return try JSONDecoder().decode(Item.self, from: Data(created.body.utf8))
    }

    @discardableResult
    func serverFile(_ name: String, _ text: String, in parent: String) throws -> Item {
        try serverFile(name, Data(text.utf8), in: parent)
    }
}
