import Foundation
import HTTPTypes
import HummingbirdTesting
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore
import SitefsCrypto

/// Locks for editing through the API: taking, refreshing, releasing and breaking them, what
/// they stop (every write without the token) and what they do not (reads), expiry on a
/// clock the test moves, and how items, listings and the change feed show them. Runs on
/// SQLite and, with `SITEFS_TEST_STORE=postgres`, on PostgreSQL.
@Suite struct LockTests {
    /// Anna ("Anna Berger") and Ben share the site Harbour, which holds `plan.odt`; Anna
    /// also has a second session (her other machine).
    struct Team: Sendable {
        let env: TestEnvironment
        let clock: ManualWallClock
        let site: Item
        let file: Item
        let anna: APIClient
        let annaElsewhere: APIClient
        let ben: APIClient
    }

    static func withTeam(_ body: @Sendable @escaping (Team) async throws -> Void) async throws {
        let clock = ManualWallClock()
        let env = try TestEnvironment(now: { clock.now })
        try await env.user("anna")
        try await env.user("ben")
        try await env.storage.accounts.setDisplayName(of: "anna", to: "Anna Berger")
        let site = try await env.site("Harbour", grantedTo: ["anna", "ben"])
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let file = try await anna.createFile("plan.odt", in: site.id, text: "v1")
            try await body(Team(env: env, clock: clock, site: site, file: file, anna: anna,
                                annaElsewhere: try await APIClient.signedIn(client, user: "anna"),
                                ben: try await APIClient.signedIn(client, user: "ben")))
        }
    }

    // MARK: Taking, refreshing, releasing

    @Test func aLockIsTakenRefreshedWithItsTokenAndReleased() async throws {
        try await Self.withTeam { team in
            let taken = try await team.anna.lock(team.file.id, device: "site-laptop-3", application: "LibreOffice", timeout: 300)
            try taken.expect(.created)
            #expect(taken.headers[.cacheControl] == "no-store")
            let grant = try taken.decode(LockGrant.self)
            #expect(grant.token.count == 43)
            #expect(grant.lock.holder == "anna" && grant.lock.holderName == "Anna Berger")
            #expect(grant.lock.device == "site-laptop-3" && grant.lock.application == "LibreOffice")
            #expect(grant.lock.createdAt == team.clock.now)
            #expect(grant.lock.expiresAt.microseconds == team.clock.now.microseconds + 300_000_000)
            // Everyone sees it on the item; the version does not move.
            let seenByBen = try await team.ben.item(team.file.id)
            #expect(seenByBen.lock == grant.lock)
            #expect(seenByBen.etag == team.file.etag)

            // A refresh: a new expiry, the same lock and token, and nothing in the change feed.
            let cursor = try await team.ben.changeCursor()
            team.clock.advance(by: 100)
            let refreshed = try await team.anna.lock(team.file.id, timeout: 600, token: grant.token)
            try refreshed.expect(.ok)
            let again = try refreshed.decode(LockGrant.self)
            #expect(again.token == grant.token && again.lock.id == grant.lock.id && again.lock.createdAt == grant.lock.createdAt)
            #expect(again.lock.expiresAt.microseconds == team.clock.now.microseconds + 600_000_000)
            #expect(try await team.ben.changes(since: cursor).changes.isEmpty)

            try await team.anna.unlock(team.file.id, token: grant.token).expect(.noContent)
            #expect(try await team.ben.item(team.file.id).lock == nil)
            let feed = try await team.ben.changes(since: cursor)
            #expect(feed.changes == [.item(try await team.ben.item(team.file.id))])
            // Releasing what is not locked is nothing to do.
            try await team.anna.unlock(team.file.id, token: grant.token).expect(.noContent)
        }
    }

    /// A client may choose a new lock's token: the lock takes it, its id follows from it
    /// (`LockIdentity`), and sending the same request again (its answer was lost) refreshes
    /// that lock rather than failing; a short token is no token to choose.
    @Test func aLockTakesTheTokenItsClientChoseSoALostAnswerCanBeSentAgain() async throws {
        try await Self.withTeam { team in
            let chosen = LockIdentity.newToken()
            let taken = try await team.anna.lock(team.file.id, device: "desk-a", application: "LibreOffice", timeout: 300, token: chosen)
            try taken.expect(.created)
            let grant = try taken.decode(LockGrant.self)
            #expect(grant.token == chosen)
            #expect(grant.lock.id == LockIdentity.lockID(forToken: chosen, item: team.file.id))
            // The same token for another file: a lock of its own, with an id of its own.
            let other = try await team.anna.createFile("other.odt", in: team.site.id, text: "v1")
            let second = try await team.anna.lock(other.id, timeout: 300, token: chosen)
            try second.expect(.created)
            #expect(try second.decode(LockGrant.self).lock.id != grant.lock.id)
            let again = try await team.anna.lock(team.file.id, device: "desk-a", application: "LibreOffice", timeout: 300, token: chosen)
            try again.expect(.ok)
            #expect(try again.decode(LockGrant.self).lock.id == grant.lock.id)
            // Someone else choosing a token of their own is still refused.
            try await team.ben.lock(team.file.id, timeout: 300, token: LockIdentity.newToken()).expect(.init(code: 423))
            try await team.anna.unlock(team.file.id, token: chosen).expect(.noContent)

            let short = try await team.anna.lock(team.file.id, timeout: 300, token: "tooshort")
            try short.expect(.created)
            #expect(try short.decode(LockGrant.self).token != "tooshort", "the server made a token of its own")
        }
    }

    /// Another user, and the holder on another machine without the token, get 423 naming the
    /// holder; reads go on.
    @Test func someoneElseGets423NamingTheHolderAndStillReads() async throws {
        try await Self.withTeam { team in
            let grant = try await team.anna.lock(team.file.id, device: "site-laptop-3").expect(.created).decode(LockGrant.self)
            for other in [team.ben, team.annaElsewhere] {
                let refused = try await other.lock(team.file.id, device: "desk")
                try refused.expect(.init(code: 423))
                let body = try refused.decode(ErrorResponse.self)
                #expect(body.error.code == "locked")
                #expect(body.error.message.contains("Anna Berger") && body.error.message.contains(grant.lock.createdAt.rfc3339))
                #expect(body.lock == grant.lock)
                // A guessed token opens nothing.
                try await other.lock(team.file.id, token: "bm90LXRoZS10b2tlbg").expect(.init(code: 423))
            }
            #expect(try await team.ben.content(team.file.id) == Array("v1".utf8))
            #expect(try await team.ben.children(team.site.id).items.map(\.name) == ["plan.odt"])
        }
    }

    // MARK: What a lock stops

    @Test func everyWriteOfTheFileNeedsTheToken() async throws {
        try await Self.withTeam { team in
            let folder = try await team.anna.createFolder("Plans", in: team.site.id)
            let file = try await team.anna.createFile("level1.odt", in: folder.id, text: "a")
            let draft = try await team.ben.createFile("draft.odt", in: folder.id, text: "ben's")
            let token = try await team.anna.lock(file.id).expect(.created).decode(LockGrant.self).token
            let locked = HTTPResponse.Status(code: 423)

            // Without the token, from anyone (the holder's other machine too): 423, nothing changed.
            for writer in [team.ben, team.annaElsewhere] {
                try await writer.put(file.id, contents: Array("b".utf8), ifMatch: nil).expect(locked)
                try await writer.patch(file.id, ItemPatch(name: "renamed.odt")).expect(locked)
                try await writer.patch(file.id, ItemPatch(modifiedAt: Timestamp(microsecondsSinceEpoch: 0))).expect(locked)
                try await writer.patch(file.id, ItemPatch(parentID: team.site.id)).expect(locked)
                let replace = try await writer.patch(draft.id, ItemPatch(name: "level1.odt", replace: true))
                try replace.expect(locked)
                #expect(try replace.decode(ErrorResponse.self).error.message.contains("'level1.odt' is locked"))
                try await writer.send(.delete, "/v1/items/\(file.id)").expect(locked)
                let folderDelete = try await writer.send(.delete, "/v1/items/\(folder.id)")
                try folderDelete.expect(locked)
                #expect(try folderDelete.decode(ErrorResponse.self).lock?.holder == "anna")
            }
            #expect(try await team.ben.item(file.id).etag == file.etag)
            #expect(try await team.ben.allChildren(folder.id).map(\.name).sorted() == ["draft.odt", "level1.odt"])

            // With it, each goes through, and the lock stays with the file.
            let headers: HTTPFields = [APIClient.lockToken: token]
            let saved = try await team.anna.send(.put, "/v1/items/\(file.id)/content", headers: headers, body: Array("b".utf8))
                .expect(.ok).decode(Item.self)
            #expect(saved.lock?.holder == "anna")
            let renamed = try await team.anna.send(.patch, "/v1/items/\(file.id)", headers: headers, json: ItemPatch(name: "final.odt"))
                .expect(.ok).decode(Item.self)
            #expect(renamed.name == "final.odt" && renamed.lock != nil)
            // Rename-over onto the locked file: the destination's token opens it, the
            // destination (and its lock) survives.
            let survivor = try await team.ben.send(.patch, "/v1/items/\(draft.id)", headers: headers,
                                                   json: ItemPatch(name: "final.odt", replace: true)).expect(.ok).decode(Item.self)
            #expect(survivor.id == file.id && survivor.lock?.holder == "anna")
            #expect(try await team.ben.content(file.id) == Array("ben's".utf8))
            // The folder goes with the token of the lock inside it (a list of tokens is fine).
            try await team.anna.send(.delete, "/v1/items/\(folder.id)", headers: [APIClient.lockToken: "dW51c2Vk, \(token)"])
                .expect(.noContent)
            try await team.ben.send(.get, "/v1/items/\(file.id)").expect(.notFound)
        }
    }

    @Test func deletingTheLockedFileItselfTakesTheToken() async throws {
        try await Self.withTeam { team in
            let token = try await team.anna.lock(team.file.id).expect(.created).decode(LockGrant.self).token
            try await team.ben.send(.delete, "/v1/items/\(team.file.id)", headers: [APIClient.lockToken: "d3Jvbmc"])
                .expect(.init(code: 423))
            try await team.ben.send(.delete, "/v1/items/\(team.file.id)", headers: [APIClient.lockToken: token]).expect(.noContent)
        }
    }

    // MARK: Breaking

    /// The holder's account breaks its lock from anywhere without the token; a token that
    /// does not open it (a lock that already ended) breaks nothing; others cannot.
    @Test func theHoldersAccountBreaksItsLockWithoutTheToken() async throws {
        try await Self.withTeam { team in
            _ = try await team.anna.lock(team.file.id).expect(.created)
            let refused = try await team.ben.send(.delete, "/v1/items/\(team.file.id)/lock")
            try refused.expect(.init(code: 423))
            #expect(try refused.decode(ErrorResponse.self).lock?.holderName == "Anna Berger")
            try await team.annaElsewhere.unlock(team.file.id, token: "c3RhbGU").expect(.init(code: 423))
            let cursor = try await team.ben.changeCursor()
            try await team.annaElsewhere.send(.delete, "/v1/items/\(team.file.id)/lock").expect(.noContent)
            #expect(try await team.ben.item(team.file.id).lock == nil)
            #expect(try await team.ben.changes(since: cursor).changes.count == 1)
            try await team.ben.put(team.file.id, contents: Array("ben".utf8), ifMatch: nil).expect(.ok)
        }
    }

    @Test func theAdministratorListsAndBreaksLocksByPath() async throws {
        try await Self.withTeam { team in
            let folder = try await team.anna.createFolder("Plans", in: team.site.id)
            let file = try await team.anna.createFile("level 1.odt", in: folder.id, text: "a")
            let grant = try await team.ben.lock(file.id, device: "tablet", application: "Collabora").expect(.created).decode(LockGrant.self)
            let documents = team.env.storage.documents
            #expect(try await documents.liveLocks() == [LockListing(site: "Harbour", path: "Plans/level 1.odt", lock: grant.lock)])
            let broken = try await documents.breakLock(site: "Harbour", path: "Plans/level 1.odt", by: .administrator("admin"))
            #expect(broken == grant.lock)
            #expect(try await documents.liveLocks().isEmpty)
            #expect(try await team.anna.item(file.id).lock == nil)
            #expect(try await documents.breakLock(site: "Harbour", path: "Plans/level 1.odt", by: .administrator("admin")) == nil)
            await #expect(throws: APIError.self) { try await documents.breakLock(site: "Harbour", path: "Plans/none", by: .administrator("admin")) }
        }
    }

    // MARK: Expiry

    /// A lock past its expiry is gone at once for everyone (no sweep needed to write); the
    /// sweep removes it and records the change, so the feed shows it go.
    @Test func anExpiredLockIsIgnoredAndTheSweepRecordsItsEnd() async throws {
        try await Self.withTeam { team in
            _ = try await team.anna.lock(team.file.id, timeout: 60).expect(.created)
            let cursor = try await team.ben.changeCursor()
            team.clock.advance(by: 59)
            #expect(try await team.ben.item(team.file.id).lock != nil)
            #expect(try await team.env.storage.documents.sweepExpiredLocks() == 0)
            team.clock.advance(by: 1)
            #expect(try await team.ben.item(team.file.id).lock == nil)
            #expect(try await team.ben.children(team.site.id).items.first?.lock == nil)
            #expect(try await team.env.storage.documents.liveLocks().isEmpty)

            #expect(try await team.env.storage.documents.sweepExpiredLocks() == 1)
            let feed = try await team.ben.changes(since: cursor)
            #expect(feed.changes == [.item(try await team.ben.item(team.file.id))])
            #expect(try await team.env.storage.documents.sweepExpiredLocks() == 0)

            try await team.ben.put(team.file.id, contents: Array("ben".utf8), ifMatch: nil).expect(.ok)
            let bens = try await team.ben.lock(team.file.id).expect(.created).decode(LockGrant.self)
            #expect(bens.lock.holder == "ben" && bens.lock.holderName == "ben")
        }
    }

    /// A dead lock not swept yet makes way for a new taker at once, and its old token
    /// refreshes nothing.
    @Test func anExpiredLockMakesWayBeforeTheSweep() async throws {
        try await Self.withTeam { team in
            let old = try await team.anna.lock(team.file.id, timeout: 10).expect(.created).decode(LockGrant.self)
            team.clock.advance(by: 11)
            let bens = try await team.ben.lock(team.file.id).expect(.created).decode(LockGrant.self)
            #expect(bens.lock.id != old.lock.id)
            try await team.anna.lock(team.file.id, token: old.token).expect(.init(code: 423))
            #expect(try await team.env.storage.documents.sweepExpiredLocks() == 0)
        }
    }

    // MARK: Where locks show

    @Test func listingsAndTheChangeFeedCarryTheLock() async throws {
        try await Self.withTeam { team in
            let cursor = try await team.ben.changeCursor()
            let grant = try await team.anna.lock(team.file.id).expect(.created).decode(LockGrant.self)
            let other = try await team.ben.createFile("other.odt", in: team.site.id, text: "x")
            let page = try await team.ben.children(team.site.id)
            #expect(page.items.map(\.lock) == [grant.lock, nil])
            let feed = try await team.ben.changes(since: cursor)
            #expect(feed.changes == [.item(try await team.ben.item(team.file.id)), .item(other)])
            guard case .item(let reported) = feed.changes.first else { Issue.record("no item"); return }
            #expect(reported.lock == grant.lock)
            // The raw JSON: an explicit null where there is no lock.
            let raw = try await team.ben.send(.get, "/v1/items/\(other.id)").expect(.ok).text
            #expect(raw.contains(#""lock":null"#))
        }
    }

    // MARK: Refusals

    @Test func onlyWritableFilesAreLockedAndRequestsAreChecked() async throws {
        try await Self.withTeam { team in
            let folder = try await team.anna.createFolder("Plans", in: team.site.id)
            for container in [folder.id, team.site.id] {
                let refused = try await team.anna.lock(container)
                try refused.expect(.badRequest)
                #expect(refused.errorCode == "not_a_file")
            }
            try await team.anna.lock("AAAAAAAAAAAAAAAAAAAAAA").expect(.notFound)
            for body in [#"{"device":"d","application":"a","timeout":0}"#, #"{"device":"d","application":"a","timeout":3601}"#,
                         #"{"device":"\#(String(repeating: "x", count: 201))","application":"a"}"#,
                         #"{"device":"d","application":"a\u0007"}"#] {
                let refused = try await team.anna.send(.put, "/v1/items/\(team.file.id)/lock", headers: [.contentType: "application/json"],
                                                       body: Array(body.utf8))
                try refused.expect(.badRequest)
                #expect(refused.errorCode == "bad_lock_request", "\(body)")
            }
            try await team.anna.send(.put, "/v1/items/\(team.file.id)/lock", headers: [.contentType: "application/json"],
                                     body: Array(#"{"device":"d"}"#.utf8)).expect(.badRequest)
            try await team.anna.put(team.file.id, contents: [1], ifMatch: nil, lockToken: "not a token!").expect(.badRequest)
            // The longest device name and timeout, and the default timeout.
            let longest = try await team.anna.lock(team.file.id, device: String(repeating: "é", count: 100), timeout: 3600)
                .expect(.created).decode(LockGrant.self)
            #expect(longest.lock.expiresAt.microseconds - longest.lock.createdAt.microseconds == 3_600_000_000)
            let other = try await team.anna.createFile("other.odt", in: team.site.id, text: "x")
            let defaulted = try await team.anna.send(.put, "/v1/items/\(other.id)/lock", json: LockRequestBody(device: "", application: "", timeout: nil))
                .expect(.created).decode(LockGrant.self)
            #expect(defaulted.lock.expiresAt.microseconds - defaulted.lock.createdAt.microseconds == 600_000_000)
        }
    }

    @Test func aReadOnlyGrantTakesNoLock() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("carl")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.storage.accounts.grant(user: "carl", site: "Harbour", readOnly: true)
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let carl = try await APIClient.signedIn(client, user: "carl")
            let file = try await anna.createFile("plan.odt", in: site.id, text: "v1")
            let refused = try await carl.lock(file.id)
            try refused.expect(.forbidden)
            #expect(refused.errorCode == "read_only")
            _ = try await anna.lock(file.id).expect(.created)
            try await carl.send(.delete, "/v1/items/\(file.id)/lock").expect(.forbidden)
            #expect(try await carl.item(file.id).lock?.holder == "anna")
        }
    }
}

extension APIClient {
    static let lockToken = HTTPField.Name("Lock-Token")!

    func lock(_ id: String, device: String = "", application: String = "", timeout: Int? = nil, token: String? = nil) async throws
        -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[Self.lockToken] = token }
        return try await send(.put, "/v1/items/\(id)/lock", headers: headers,
                              json: LockRequestBody(device: device, application: application, timeout: timeout))
    }

    func unlock(_ id: String, token: String) async throws -> TestResponse {
        try await send(.delete, "/v1/items/\(id)/lock", headers: [Self.lockToken: token])
    }

    func put(_ id: String, contents: [UInt8], ifMatch: String?, lockToken: String) async throws -> TestResponse {
        var headers: HTTPFields = [Self.lockToken: lockToken]
        if let ifMatch { headers[.ifMatch] = "\"\(ifMatch)\"" }
        return try await send(.put, "/v1/items/\(id)/content", headers: headers, body: contents)
    }

    /// The change feed's cursor of now.
    func changeCursor() async throws -> String {
        try await send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
    }

    func changes(since cursor: String) async throws -> ChangePage {
        try await send(.get, "/v1/changes?cursor=\(cursor)").expect(.ok).decode(ChangePage.self)
    }
}
