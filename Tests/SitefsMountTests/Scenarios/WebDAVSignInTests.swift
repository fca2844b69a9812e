import Foundation
import SitefsTestSupport
import Testing

/// Signing in to a WebDAV server that asks for a password (Apache, HTTP Basic): detected
/// without `--backend`, `dav://` accepted, a wrong password refused with a reason, and the
/// password kept only in the private credentials file, never in argv or the log.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct WebDAVSignInTests {
    @Test func aPasswordProtectedServerSignsInMountsAndKeepsThePasswordPrivate() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-davauth-\(UUID().uuidString.prefix(8))")
        let served = root.appendingPathComponent("dav-root")
        let mountpoint = root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: served.appendingPathComponent("Harbour Tower"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let password = "correct horse \"battery\" staple"
        let server = try ApacheDAVServer(root: served, credentials: BasicCredentials(user: "anna", password: password))
        defer { server.stop() }
        try server.handOver()
        let environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path]
        func sitefs(_ arguments: [String], stdin: String? = nil) throws -> (status: Int32, out: String, err: String) {
            try run(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: 60, environment: environment)
        }
        // As GNOME and KDE write it.
        let url = server.collectionURL.replacingOccurrences(of: "http://", with: "dav://")

        let refused = try sitefs(["login", url, "--user", "anna"], stdin: "wrong\n")
        #expect(refused.status != 0 && refused.err.contains("wrong user name or password"), "\(refused.err)")
        let login = try sitefs(["login", url, "--user", "anna"], stdin: password + "\n")
        try #require(login.status == 0, "\(login.err)")
        #expect(login.out.contains("WebDAV"))

        let credentials = root.appendingPathComponent("config/sitefs/credentials.json")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: credentials.path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let stored = try String(contentsOf: credentials, encoding: .utf8)
        #expect(stored.contains("\"webdav\"") && stored.contains("\"basic\""))

        let cache = root.appendingPathComponent("cache")
        let mount = try sitefs(["mount", url, mountpoint.path, "--cache-dir", cache.path, "--log-level", "trace"])
        try #require(mount.status == 0, "\(mount.err)")
        defer {
            _ = try? sitefs(["unmount", mountpoint.path])
            MountTable.release(mountpoint.path)
        }
        #expect(try run(URL(fileURLWithPath: "/bin/ls"), [mountpoint.path]).out == "Harbour Tower\n")
        #expect(try run(URL(fileURLWithPath: "/bin/sh"), ["-c", "echo signed > '\(mountpoint.path)/Harbour Tower/a.txt'"]).status == 0)
        #expect(try sitefs(["sync", mountpoint.path, "--timeout", "30"]).status == 0)
        #expect(try String(contentsOf: served.appendingPathComponent("Harbour Tower/a.txt"), encoding: .utf8) == "signed\n")

        // Neither the password nor its Basic encoding on any command line or in the log.
        let encoded = Data("anna:\(password)".utf8).base64EncodedString()
        let log = try String(contentsOf: cache.appendingPathComponent("sitefs.log"), encoding: .utf8)
        #expect(!log.contains(password) && !log.contains(encoded) && !log.isEmpty)
        for pid in (try FileManager.default.contentsOfDirectory(atPath: "/proc")).compactMap(Int32.init) {
            guard let raw = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            let line = String(decoding: raw, as: UTF8.self)
            #expect(!line.contains("correct horse") && !line.contains(encoded))
        }
        #expect(try sitefs(["logout", url]).status == 0)
        #expect(!(try String(contentsOf: credentials, encoding: .utf8)).contains("anna"))
    }
}
