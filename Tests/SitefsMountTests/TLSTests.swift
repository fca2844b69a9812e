import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// HTTPS end to end (issue 17): `sitefs-server --tls-cert/--tls-key`, `sitefs login` and
/// `mount` with `--ca-file` (or `SSL_CERT_FILE`), certificates that must not be trusted, and
/// plain http refused for any host but this machine. Every certificate comes from a
/// throwaway CA made for the test.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct TLSTests {
    /// A data directory with anna and the site Riverside, a CA, and a client environment.
    private final class Setup: @unchecked Sendable {
        let root: URL
        let data: URL
        let ca: ThrowawayCA
        let environment: [String: String]

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-tls-\(UUID().uuidString.prefix(8))")
            data = root.appendingPathComponent("server")
            ca = try ThrowawayCA(in: root.appendingPathComponent("ca"))
            environment = ["XDG_CONFIG_HOME": root.appendingPathComponent("config").path,
                           "XDG_CACHE_HOME": root.appendingPathComponent("cache").path, "SSL_CERT_FILE": ""]
            for arguments in [["user", "add", "anna"], ["site", "add", "Riverside"], ["grant", "anna", "Riverside"]] {
                let result = try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: "site-pass\n")
                guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
            }
        }

        func server(_ certificate: ThrowawayCA.Issued) throws -> ServerProcess {
            try ServerProcess(dataDirectory: data, extraArguments: ["--tls-cert", certificate.certificate, "--tls-key", certificate.key])
        }

        func sitefs(_ arguments: [String], stdin: String? = nil, environment extra: [String: String] = [:]) throws
            -> (status: Int32, out: String, err: String) {
            try run(BuiltProducts.executable("sitefs"), arguments, stdin: stdin, timeout: 60,
                    environment: environment.merging(extra) { $1 })
        }

        func login(_ url: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
            try sitefs(["login", url, "--user", "anna"] + extra, stdin: "site-pass\n", environment: environment)
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    @Test func aMountOverHTTPSTrustsTheCAGivenAtLogin() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let server = try setup.server(try setup.ca.issue("server"))
        defer { server.stop() }
        #expect(server.baseURL.hasPrefix("https://127.0.0.1:"))
        let login = try setup.login(server.baseURL, ["--ca-file", setup.ca.certificate])
        try #require(login.status == 0, "login over https: \(login.err)")
        let mountpoint = setup.root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        let mount = try setup.sitefs(["mount", server.baseURL, mountpoint.path])  // the CA from login
        try #require(mount.status == 0, "mount over https: \(mount.err)")
        defer {
            _ = try? setup.sitefs(["unmount", mountpoint.path])
            MountTable.release(mountpoint.path)
        }
        try "over TLS\n".write(toFile: mountpoint.appendingPathComponent("Riverside/tls.txt").path, atomically: false, encoding: .utf8)
        #expect(try setup.sitefs(["sync", mountpoint.path]).status == 0)
        // What the server has, read back with curl trusting the same CA.
        let api = Curl(baseURL: server.baseURL)
        let session = try api.call("POST", "/v1/session", json: #"{"username":"anna","password":"site-pass"}"#,
                                   extra: ["--cacert", setup.ca.certificate])
        let token = try JSONDecoder().decode(SessionGrant.self, from: Data(session.body.utf8)).token
        let signedIn = Curl(baseURL: server.baseURL, token: token)
        let site = try JSONDecoder().decode(ItemPage.self, from: Data(signedIn.call("GET", "/v1/sites", extra: ["--cacert", setup.ca.certificate]).body.utf8)).items[0]
        let files = try JSONDecoder().decode(ItemPage.self, from: Data(signedIn.call(
            "GET", "/v1/items/\(site.id)/children", extra: ["--cacert", setup.ca.certificate]).body.utf8)).items
        #expect(files.map(\.name) == ["tls.txt"])
    }

    @Test func certificatesThatDoNotCheckOutAreRefused() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let untrusted: [(String, ThrowawayCA.Issued)] = [
            ("self-signed", try setup.ca.selfSigned("self")),
            ("for another host", try setup.ca.issue("other", hosts: ["DNS:other.example"])),
            ("expired", try setup.ca.issue("expired", expired: true)),
        ]
        for (what, certificate) in untrusted {
            let server = try setup.server(certificate)
            defer { server.stop() }
            let login = try setup.login(server.baseURL, ["--ca-file", setup.ca.certificate])
            #expect(login.status != 0, "a certificate \(what) was trusted")
            #expect(login.err.lowercased().contains("certificate") || login.err.contains("SSL"), "\(what): \(login.err)")
        }
    }

    @Test func theSystemsTrustOrSSLCertFileDecide() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let server = try setup.server(try setup.ca.issue("server"))
        defer { server.stop() }
        let untrusted = try setup.login(server.baseURL)
        #expect(untrusted.status != 0, "a server no trusted CA vouches for was trusted")
        let trusted = try setup.login(server.baseURL, environment: ["SSL_CERT_FILE": setup.ca.certificate])
        #expect(trusted.status == 0, "SSL_CERT_FILE: \(trusted.err)")
    }

    /// Refused before any request is made or any password read (192.0.2.1 is a documentation
    /// address: nothing is ever sent there).
    @Test func plainHTTPToAnotherHostIsRefused() throws {
        let setup = try Setup()
        defer { setup.remove() }
        let login = try setup.login("http://192.0.2.1:8080")
        #expect(login.status != 0 && login.err.contains("--allow-insecure-http"), "\(login.err)")
        let mountpoint = setup.root.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountpoint, withIntermediateDirectories: true)
        let mount = try setup.sitefs(["mount", "http://192.0.2.1:8080", mountpoint.path])
        #expect(mount.status != 0 && mount.err.contains("--allow-insecure-http"), "\(mount.err)")
        // This machine is fine over plain http.
        let local = try ServerProcess(dataDirectory: setup.data)
        defer { local.stop() }
        #expect(try setup.login(local.baseURL).status == 0)
    }
}
