import ArgumentParser
import Foundation
import SitefsCommandLine
import SitefsHTTPBackend
import SitefsProvider

struct Login: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign in to a server. The password is read from the terminal or standard input, never from arguments.")

    @Argument(help: "The server, e.g. https://files.example.org, http://127.0.0.1:8080, or a WebDAV folder (https:// or davs://).")
    var url: String
    @Option(help: "User name.") var user: String
    @Option(help: "What the server speaks: sitefs or webdav (default: detected).") var backend: BackendKind?
    @Flag(help: "WebDAV: read a bearer token instead of a password.") var bearer = false
    @OptionGroup var transport: TransportOptions

    func run() throws {
        let server = CredentialStore.normalize(url)
        try TransportSecurity.check(server, allowInsecureHTTP: transport.allowInsecureHTTP)
        let store = CredentialStore.standard
        let caFile = try TransportSecurity.caFile(for: server, given: transport.caFile, stored: store.entry(for: server)?.caFile)
        let secret = try PasswordInput.read(confirm: false)
        var entry = CredentialStore.Entry(user: user, token: secret, expiresAt: "", caFile: caFile, backend: nil,
                                          scheme: bearer ? "bearer" : "basic")
        let kind = try backend ?? BackendDetection.detect(server, authorization: CredentialFileAuthorization.header(for: entry),
                                                          caFile: caFile)
        let signedIn: String
        switch kind {
        case .sitefs:
            guard !bearer else { throw UserFacingError("--bearer is for WebDAV servers; a sitefs server signs in with a password") }
            let grant: SitefsAPI.SessionGrant
            do {
                grant = try HTTPDocumentBackend.signIn(baseURL: server, username: user, password: secret, caFile: caFile)
            } catch {
                throw UserFacingError("sign-in to \(server) failed: \(error)")
            }
            entry = .init(user: user, token: grant.token, expiresAt: grant.expiresAt.rfc3339, caFile: caFile)
            signedIn = "signed in to \(server) as \(user) (until \(grant.expiresAt.rfc3339))"
        case .webdav:
            entry.backend = .webdav
            try WebDAVSignIn.check(server, authorization: CredentialFileAuthorization.header(for: entry), caFile: caFile)
            signedIn = "signed in to \(server) (WebDAV) as \(user)"
        }
        var entries = store.load()
        entries[server] = entry
        try store.save(entries)
        print(signedIn)
    }
}

struct Logout: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign out: revoke the session and forget its token.")

    @Argument(help: "The server, as given to login.") var url: String

    func run() throws {
        let server = CredentialStore.normalize(url)
        let store = CredentialStore.standard
        var entries = store.load()
        guard let entry = entries.removeValue(forKey: server) else { throw UserFacingError("not signed in to \(server)") }
        if entry.kind == .webdav {
            // Nothing to revoke: Basic auth and a bearer token given to us live on the server's side.
            try store.save(entries)
            print("signed out of \(server) (its credentials are forgotten here)")
            return
        }
        do {
            try HTTPDocumentBackend(baseURL: server, tokens: FixedToken(entry.token), caFile: entry.caFile).signOut()
        } catch ProviderError.notAuthenticated {
            // Already expired or revoked: forgetting it is all that is left.
        } catch {
            FileHandle.standardError.write(Data("warning: the server did not confirm the sign-out: \(error)\n".utf8))
        }
        try store.save(entries)
        print("signed out of \(server)")
    }
}

import SitefsAPI
