import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

@Suite struct SessionTests {
    @Test func signInReturnsA256BitTokenThatOpensTheAPI() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.withRouter { client in
            let response = try await APIClient(client).send(.post, "/v1/session", json: SessionRequest(username: "anna", password: "secret"))
            try response.expect(.created)
            let grant = try response.decode(SessionGrant.self)
            #expect(grant.token.count == 43)  // 32 bytes, base64url without padding
            #expect(grant.expiresAt > Timestamp.now())
            let api = APIClient(client, token: grant.token)
            try await api.send(.get, "/v1/sites").expect(.ok)
        }
    }

    @Test func wrongPasswordAndUnknownUserAreTheSame401() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.withRouter { client in
            let api = APIClient(client)
            for (user, password) in [("anna", "wrong"), ("nobody", "secret")] {
                let response = try await api.send(.post, "/v1/session", json: SessionRequest(username: user, password: password))
                try response.expect(.unauthorized)
                #expect(response.errorCode == "unauthorized")
            }
        }
    }

    @Test func callsWithoutAValidTokenAre401() async throws {
        let env = try TestEnvironment()
        try await env.withRouter { client in
            let api = APIClient(client)
            try await api.send(.get, "/v1/sites").expect(.unauthorized)
            try await api.send(.get, "/v1/sites", headers: [.authorization: "Bearer not-a-token"]).expect(.unauthorized)
            try await api.send(.get, "/v1/sites", headers: [.authorization: "Basic YW5uYTpzZWNyZXQ="]).expect(.unauthorized)
        }
    }

    @Test func malformedSignInBodiesAre400() async throws {
        let env = try TestEnvironment()
        try await env.withRouter { client in
            let api = APIClient(client)
            let notJSON = try await api.send(.post, "/v1/session", body: Array("{username: anna".utf8))
            try notJSON.expect(.badRequest)
            #expect(notJSON.errorCode == "bad_json")
            try await api.send(.post, "/v1/session", body: Array("{\"username\":\"anna\"}".utf8)).expect(.badRequest)
        }
    }

    @Test func expiredTokensAreRefused() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            try await api.send(.get, "/v1/sites").expect(.ok)
            try await env.storage.accounts.expireSessions(of: "anna")
            let response = try await api.send(.get, "/v1/sites")
            try response.expect(.unauthorized)
            #expect(response.text.contains("expired"))
        }
    }

    @Test func tokensExpireAfterTheConfiguredLifetime() async throws {
        let clock = ManualWallClock()
        let env = try TestEnvironment(tokenLifetimeSeconds: 1, now: { clock.now })
        try await env.user("anna")
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            clock.advance(by: 0.999)
            try await api.send(.get, "/v1/sites").expect(.ok)
            clock.advance(by: 0.001)
            try await api.send(.get, "/v1/sites").expect(.unauthorized)
        }
    }

    @Test func signOutRevokesTheToken() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let other = try await APIClient.signedIn(client, user: "anna")
            try await api.send(.delete, "/v1/session").expect(.noContent)
            try await api.send(.get, "/v1/sites").expect(.unauthorized)
            try await other.send(.get, "/v1/sites").expect(.ok)
        }
    }

    @Test func neitherTokensNorPasswordsAreStoredInTheClear() async throws {
        let env = try TestEnvironment()
        try await env.user("anna", password: "correct horse battery")
        let token = try await env.withLiveServer { client in
            try await APIClient.signedIn(client, user: "anna", password: "correct horse battery").token!
        }
        defer { env.remove() }
        var stored: [(name: String, bytes: Data)] = []
        if let postgres = env.postgres {
            // Every stored row of the two tables that could hold them, as PostgreSQL prints it.
            let rows = try postgres.psql("SELECT users::text FROM users UNION ALL SELECT sessions::text FROM sessions")
            #expect(rows.contains("anna"))
            stored.append(("the users and sessions tables", Data(rows.utf8)))
        } else {
            let files = try FileManager.default.contentsOfDirectory(atPath: env.directory.path).filter { $0.hasPrefix("metadata.sqlite") }
            #expect(!files.isEmpty)
            for file in files { stored.append((file, try Data(contentsOf: env.directory.appendingPathComponent(file)))) }
        }
        for (name, bytes) in stored {
            #expect(bytes.range(of: Data(token.utf8)) == nil, "token found in \(name)")
            #expect(bytes.range(of: Data("correct horse battery".utf8)) == nil, "password found in \(name)")
        }
    }
}
