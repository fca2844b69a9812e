import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// The servers every scenario runs against: the project's own, and three WebDAV servers
/// nobody here wrote. A new backend joins the suite by adding a case here.
enum ScenarioBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sitefs, apache, nginx, wsgidav

    var testDescription: String { rawValue }

    /// Starts the server in `directory` with two sites, "Harbour Tower" and "Riverside",
    /// which user anna may write.
    func start(in directory: URL) throws -> any ScenarioServer {
        switch self {
        case .sitefs: try SitefsScenarioServer(directory: directory)
        case .apache: try DAVScenarioServer(directory: directory) { try ApacheDAVServer(root: $0) }
        case .nginx: try DAVScenarioServer(directory: directory) { try NginxDAVServer(root: $0) }
        case .wsgidav: try DAVScenarioServer(directory: directory) { try WsgiDAVServer(root: $0) }
        }
    }
}

/// A server as a scenario sees it: where to mount, and what another client of the same
/// server does (write, read, list), through the server's own means: its API, or its disk.
/// Paths are as on the mount: "Harbour Tower/Plans/level1.txt".
protocol ScenarioServer: AnyObject, Sendable {
    var backend: ScenarioBackend { get }
    /// The URL `sitefs login` and `sitefs mount` are given.
    var url: String { get }
    /// The TCP port on 127.0.0.1 (for a fault proxy in front).
    var port: Int { get }
    /// The URL as seen through a proxy on `port` (same path).
    func url(throughPort port: Int) -> String
    /// Another client saves `path` (creating or replacing it).
    func write(_ path: String, _ data: Data) throws
    /// Another client makes a folder.
    func makeFolder(_ path: String) throws
    /// Another client deletes a file or folder.
    func remove(_ path: String) throws
    /// Another client renames a file or folder within its folder.
    func rename(_ path: String, to name: String) throws
    /// The content at `path`, or nil when there is none.
    func read(_ path: String) throws -> Data?
    /// The names in a folder, sorted.
    func names(in folder: String) throws -> [String]
    func stop()
}

extension ScenarioServer {
    func text(_ path: String) throws -> String? {
        try read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    func write(_ path: String, _ text: String) throws {
        try write(path, Data(text.utf8))
    }
}

/// `sitefs-server`, changed and checked through its API as anna.
final class SitefsScenarioServer: ScenarioServer, @unchecked Sendable {
    let backend = ScenarioBackend.sitefs
    let process: ServerProcess
    let api: Curl
    private let scratch: URL

    init(directory: URL) throws {
        let data = directory.appendingPathComponent("server")
        scratch = directory
        for arguments in [["user", "add", "anna"], ["site", "add", "Harbour Tower"], ["site", "add", "Riverside"],
                          ["grant", "anna", "Harbour Tower"], ["grant", "anna", "Riverside"]] {
            let result = try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: ScenarioMount.password + "\n")
            guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
        }
        process = try ServerProcess(dataDirectory: data)
        var client = Curl(baseURL: process.baseURL)
        let session = try client.call("POST", "/v1/session", json: #"{"username":"anna","password":"\#(ScenarioMount.password)"}"#)
        client.token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        api = client
    }

    var url: String { process.baseURL }
    var port: Int { Int(process.baseURL.split(separator: ":").last!)! }
    func url(throughPort port: Int) -> String { "http://127.0.0.1:\(port)" }

    private func item(_ path: String) throws -> Item? { try api.item(atPath: path) }

    private static func encoded(_ name: String) -> String {
        name.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: ".-_")))!
    }

    private func split(_ path: String) throws -> (parent: Item, name: String) {
        let components = path.split(separator: "/").map(String.init)
        guard let parent = try item(components.dropLast().joined(separator: "/")), let name = components.last else {
            throw ProcessFailure("no folder for \(path) on the server")
        }
        return (parent, name)
    }

    func write(_ path: String, _ data: Data) throws {
        let local = scratch.appendingPathComponent("upload-\(UUID().uuidString)")
        try data.write(to: local)
        defer { try? FileManager.default.removeItem(at: local) }
        let body = ["-H", "Expect:", "--data-binary", "@\(local.path)"]
        let result: (status: Int, body: String)
        if let existing = try item(path) {
            result = try api.call("PUT", "/v1/items/\(existing.id)/content", extra: body)
        } else {
            let (parent, name) = try split(path)
            result = try api.call("POST", "/v1/items/\(parent.id)/children?name=\(Self.encoded(name))", extra: body)
        }
        guard (200..<300).contains(result.status) else { throw ProcessFailure("write \(path): \(result.status) \(result.body)") }
    }

    func makeFolder(_ path: String) throws {
        let (parent, name) = try split(path)
        let json = String(decoding: try JSONEncoder().encode(["name": name, "kind": "folder"]), as: UTF8.self)
        let result = try api.call("POST", "/v1/items/\(parent.id)/children", json: json)
        guard result.status == 201 else { throw ProcessFailure("mkdir \(path): \(result.status) \(result.body)") }
    }

    func remove(_ path: String) throws {
        guard let existing = try item(path) else { throw ProcessFailure("no \(path) on the server") }
        let result = try api.call("DELETE", "/v1/items/\(existing.id)")
        guard (200..<300).contains(result.status) else { throw ProcessFailure("delete \(path): \(result.status) \(result.body)") }
    }

    func rename(_ path: String, to name: String) throws {
        guard let existing = try item(path) else { throw ProcessFailure("no \(path) on the server") }
        let json = String(decoding: try JSONEncoder().encode(["name": name]), as: UTF8.self)
        let result = try api.call("PATCH", "/v1/items/\(existing.id)", json: json)
        guard result.status == 200 else { throw ProcessFailure("rename \(path): \(result.status) \(result.body)") }
    }

    func read(_ path: String) throws -> Data? {
        guard let existing = try item(path) else { return nil }
        let local = scratch.appendingPathComponent("download-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: local) }
        let result = try api.call("GET", "/v1/items/\(existing.id)/content", output: local)
        guard result.status == 200 else { throw ProcessFailure("read \(path): \(result.status)") }
        return try Data(contentsOf: local)
    }

    func names(in folder: String) throws -> [String] {
        guard let existing = try item(folder) else { throw ProcessFailure("no \(folder) on the server") }
        return try api.children(of: existing.id).map(\.name).sorted()
    }

    func stop() { _ = process.stop() }
}

/// A WebDAV server serving a folder of the test's: changed and checked on its disk.
final class DAVScenarioServer: ScenarioServer, @unchecked Sendable {
    let backend: ScenarioBackend
    let server: any WebDAVTestServer

    init(directory: URL, start: (URL) throws -> any WebDAVTestServer) throws {
        let root = directory.appendingPathComponent("dav-root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        server = try start(root)
        backend = server is ApacheDAVServer ? .apache : server is NginxDAVServer ? .nginx : .wsgidav
        try server.handOver()
        try server.makeFolder("Harbour Tower")
        try server.makeFolder("Riverside")
    }

    var url: String { server.collectionURL }
    var port: Int { Int(server.origin.split(separator: ":").last!)! }
    func url(throughPort port: Int) -> String { "http://127.0.0.1:\(port)" + server.collectionPath }

    func write(_ path: String, _ data: Data) throws { try server.writeFile(path, data) }
    func makeFolder(_ path: String) throws { try server.makeFolder(path) }
    func remove(_ path: String) throws { try server.remove(path) }
    func rename(_ path: String, to name: String) throws {
        try server.rename(path, to: (path.split(separator: "/").dropLast().map(String.init) + [name]).joined(separator: "/"))
    }
    func read(_ path: String) throws -> Data? { server.exists(path) ? try server.read(path) : nil }

    /// What the folder holds on disk, but Apache's `.DAV`: mod_dav_fs keeps a folder's dead
    /// properties there and never serves it.
    func names(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: server.onDisk(folder).path).filter { $0 != ".DAV" }.sorted()
    }

    func stop() { server.stop() }
}
