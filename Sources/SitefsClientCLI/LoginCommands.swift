import ArgumentParser
import Foundation
import SitefsCommandLine
import SitefsHTTPBackend
import SitefsProvider

struct Login: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sign in to a server. The password is read from the terminal or standard input, never from arguments.")

    @Argument(help: "The server, e.g. https://files.example.org or http://127.0.0.1:8080") var url: String
    @Option(help: "User name.") var user: String
    @OptionGroup var transport: TransportOptions

    func run() throws {
        let server = CredentialStore.normalize(url)
        try TransportSecurity.check(server, allowInsecureHTTP: transport.allowInsecureHTTP)
        let store = CredentialStore.standard
        let caFile = try TransportSecurity.caFile(for: server, given: transport.caFile, stored: store.entry(for: server)?.caFile)
        let password = try PasswordInput.read(confirm: false)
        let grant: SitefsAPI.SessionGrant
        do {
            grant = try HTTPDocumentBackend.signIn(baseURL: server, username: user, password: password, caFile: caFile)
        } catch {
            throw UserFacingError("sign-in to \(server) failed: \(error)")
        }
        var entries = store.load()
        entries[server] = .init(user: user, token: grant.token, expiresAt: grant.expiresAt.rfc3339, caFile: caFile)
        try store.save(entries)
        print("signed in to \(server) as \(user) (until \(grant.expiresAt.rfc3339))")
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
