import Foundation
import SitefsHTTPBackend

/// Session tokens per server, in `$XDG_CONFIG_HOME/sitefs/credentials.json` (0600, in a
/// 0700 folder), written atomically. Tokens never go on a command line or into a log.
struct CredentialStore: Sendable {
    struct Entry: Codable, Sendable {
        var user: String
        var token: String
        var expiresAt: String
        /// The certificate authorities given at login (`--ca-file`), used by later commands.
        var caFile: String?

        enum CodingKeys: String, CodingKey {
            case user, token
            case expiresAt = "expires_at"
            case caFile = "ca_file"
        }
    }

    let file: URL

    static var standard: CredentialStore {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        return CredentialStore(file: base.appendingPathComponent("sitefs/credentials.json"))
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

    /// Server URLs are compared without a trailing slash.
    static func normalize(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// The mount's token source: re-reads the credentials file when it changed, so signing in
/// again fixes an expired session without a remount.
final class CredentialFileTokens: TokenSource, @unchecked Sendable {
    private let store: CredentialStore
    private let server: String
    private let lock = NSLock()
    private var cached: (modified: timespec, token: String?)?

    init(store: CredentialStore, server: String) {
        self.store = store
        self.server = server
    }

    func token() -> String? {
        var info = stat()
        guard stat(store.file.path, &info) == 0 else { return nil }
        lock.lock()
        defer { lock.unlock() }
        if let cached, cached.modified.tv_sec == info.st_mtim.tv_sec, cached.modified.tv_nsec == info.st_mtim.tv_nsec {
            return cached.token
        }
        let token = store.entry(for: server)?.token
        cached = (info.st_mtim, token)
        return token
    }
}
