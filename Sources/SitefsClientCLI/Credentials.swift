import Foundation
import SitefsHTTPBackend
import SitefsWebDAVBackend

/// Credentials per server, in `$XDG_CONFIG_HOME/sitefs/credentials.json` (0600, in a 0700
/// folder), written atomically: a session token for sitefs-server; for a WebDAV server, the
/// password (Basic auth has nothing else to keep) or a bearer token. Secrets never go on a
/// command line or into a log.
struct CredentialStore: Sendable {
    struct Entry: Codable, Sendable {
        var user: String
        /// The session token (sitefs), or the WebDAV password or bearer token (see `scheme`).
        var token: String
        var expiresAt: String
        /// The certificate authorities given at login (`--ca-file`), used by later commands.
        var caFile: String?
        /// What the server speaks; nil (written before WebDAV) is sitefs.
        var backend: BackendKind?
        /// For WebDAV: how `token` is sent (`basic`: it is the password; `bearer`).
        var scheme: String?

        enum CodingKeys: String, CodingKey {
            case user, token, backend, scheme
            case expiresAt = "expires_at"
            case caFile = "ca_file"
        }

        var kind: BackendKind { backend ?? .sitefs }
    }

    let file: URL

    static var standard: CredentialStore {
        CredentialStore(file: UserDirectories.configuration.appendingPathComponent("sitefs/credentials.json"))
    }

    func load() -> [String: Entry] {
        guard let data = try? Data(contentsOf: file) else { return [:] }
        return (try? JSONDecoder().decode([String: Entry].self, from: data)) ?? [:]
    }

    func entry(for server: String) -> Entry? { load()[server] }

    func save(_ entries: [String: Entry]) throws {
        let folder = file.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        chmod(folder.path, 0o700)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(entries)
        let temporary = folder.appendingPathComponent(".credentials.\(getpid()).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteNoPermission) }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        fsync(descriptor)
        close(descriptor)
        guard written == data.count, rename(temporary.path, file.path) == 0 else {
            unlink(temporary.path)
            throw CocoaError(.fileWriteUnknown)
        }
    }

    /// Server URLs are compared without a trailing slash, and `dav://` / `davs://` (as GNOME
    /// and KDE write WebDAV URLs) as the `http://` / `https://` they stand for.
    static func normalize(_ url: String) -> String {
        var url = WebDAVLocation.httpURL(url) ?? url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// A server's entry in the credentials file as it is now: read again only when the file
/// changed (its mtime), so the mount picks up a new `sitefs login` without a remount and
/// without parsing the file for every request.
final class CredentialFileEntry: @unchecked Sendable {
    private let store: CredentialStore
    private let server: String
    private let lock = NSLock()
    private var cached: (modified: timespec, entry: CredentialStore.Entry?)?

    init(store: CredentialStore, server: String) {
        self.store = store
        self.server = server
    }

    var current: CredentialStore.Entry? {
        var info = stat()
        guard stat(store.file.path, &info) == 0 else { return nil }
        lock.lock()
        defer { lock.unlock() }
        if let cached, cached.modified.tv_sec == info.st_mtim.tv_sec, cached.modified.tv_nsec == info.st_mtim.tv_nsec {
            return cached.entry
        }
        let entry = store.entry(for: server)
        cached = (info.st_mtim, entry)
        return entry
    }
}

/// The mount's bearer token for sitefs-server, from the credentials file.
final class CredentialFileTokens: TokenSource, Sendable {
    private let entry: CredentialFileEntry

    init(store: CredentialStore, server: String) {
        entry = CredentialFileEntry(store: store, server: server)
    }

    func token() -> String? { entry.current?.token }
}

/// A WebDAV mount's `Authorization` header, from the credentials file.
final class CredentialFileAuthorization: AuthorizationSource, Sendable {
    private let entry: CredentialFileEntry

    init(store: CredentialStore, server: String) {
        entry = CredentialFileEntry(store: store, server: server)
    }

    func authorization() -> String? { entry.current.flatMap(Self.header(for:)) }

    /// The header value an entry signs in with.
    static func header(for entry: CredentialStore.Entry) -> String? {
        switch entry.scheme {
        case "bearer": return "Bearer " + entry.token
        case "basic": return "Basic " + Data("\(entry.user):\(entry.token)".utf8).base64EncodedString()
        default: return nil
        }
    }
}
