import Foundation
import HTTPTypes
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

/// `POST /v1/items/{id}/versions/{etag}/restore`: an older version's content becomes the
/// newest version (sharing its blob), conditional and lock-checked like an upload, reported
/// by the change feed; what it refuses and in which order; and that a blob two versions
/// share lives as long as either. Runs on SQLite, and on PostgreSQL with
/// SITEFS_TEST_STORE=postgres, like every store test.
@Suite struct RestoreTests {
    /// plan.txt with three versions ("v1", "v2, longer", "v3"), oldest first in the result.
    static func threeVersions(_ api: APIClient, in site: Item) async throws -> (file: Item, versions: [Version]) {
        let first = try await api.createFile("plan.txt", in: site.id, text: "v1")
        let second = try await api.put(first.id, contents: Array("v2, longer".utf8), ifMatch: first.etag).expect(.ok).decode(Item.self)
        let third = try await api.put(first.id, contents: Array("v3".utf8), ifMatch: second.etag).expect(.ok).decode(Item.self)
        let versions = try await api.versions(third.id)
        #expect(versions.map(\.etag) == [third.etag, second.etag, first.etag])
        return (third, Array(versions.reversed()))
    }

    @Test func anOlderVersionBecomesTheNewestAndNothingIsLost() async throws {
        let env = try TestEnvironment()
        try await ContentTests.withSite(env) { api, site in
            let (file, before) = try await Self.threeVersions(api, in: site)
            let cursor = try await api.changeCursor()
            let response = try await api.restore(file.id, version: before[1].etag, ifMatch: file.etag).expect(.ok)
            let restored = try response.decode(Item.self)
            #expect(response.headers[.eTag] == "\"\(restored.etag)\"")
            #expect(restored.id == file.id && restored.name == "plan.txt")
            #expect(!before.map(\.etag).contains(restored.etag), "a new version, with an etag of its own")
            #expect(restored.size == 10 && restored.modifiedBy == "anna")
            #expect(try await api.content(file.id) == Array("v2, longer".utf8))

            let after = try await api.versions(file.id)
            #expect(after.map(\.etag) == [restored.etag] + before.reversed().map(\.etag), "the old versions all stay")
            #expect(after[0].size == 10 && after[0].modifiedBy == "anna")
            // Every version still reads as it was, the one it replaced included.
            for (version, text) in zip(before, ["v1", "v2, longer", "v3"]) {
                let bytes = try await api.send(.get, "/v1/items/\(file.id)/content?version=\(version.etag)").expect(.ok).bytes
                #expect(bytes == Array(text.utf8))
            }
            // Shared, not copied: the new version names the restored version's blob.
            let blobs = try await Self.blobs(of: file.id, in: env)  // newest first: restored, v3, v2, v1
            #expect(blobs.count == 4 && blobs[0] == blobs[2] && blobs[0] != blobs[1] && blobs[0] != blobs[3])

            let feed = try await api.changes(since: cursor)
            #expect(feed.changes == [.item(restored)])
        }
    }

    /// One rule: restoring the version that is already current is a new version too.
    @Test func restoringTheCurrentVersionAddsOne() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            let file = try await api.createFile("plan.txt", in: site.id, text: "only")
            let restored = try await api.restore(file.id, version: file.etag, ifMatch: nil).expect(.ok).decode(Item.self)
            #expect(restored.etag != file.etag)
            #expect(try await api.versions(file.id).map(\.etag) == [restored.etag, file.etag])
            #expect(try await api.content(file.id) == Array("only".utf8))
        }
    }

    @Test func refusalsComeInTheOrderOfTheRequest() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            let (file, versions) = try await Self.threeVersions(api, in: site)
            // No such version: 404 whatever If-Match says.
            let unknown = try await api.restore(file.id, version: "0123456789abcdef0123456789abcdef", ifMatch: "not-the-version")
            try unknown.expect(.notFound)
            #expect(unknown.errorCode == "no_such_version")
            // A version of another file is no version of this one.
            let other = try await api.createFile("other.txt", in: site.id, text: "x")
            #expect(try await api.restore(file.id, version: other.etag, ifMatch: nil).expect(.notFound).errorCode == "no_such_version")
            // A stale If-Match: 412 with the item as it is.
            let stale = try await api.restore(file.id, version: versions[0].etag, ifMatch: versions[1].etag)
            try stale.expect(.preconditionFailed)
            #expect(try stale.decode(ErrorResponse.self).item == file)
            // Not a file, no such item.
            let folder = try await api.createFolder("Plans", in: site.id)
            #expect(try await api.restore(folder.id, version: folder.etag, ifMatch: nil).expect(.badRequest).errorCode == "not_a_file")
            #expect(try await api.restore(site.id, version: site.etag, ifMatch: nil).expect(.badRequest).errorCode == "not_a_file")
            #expect(try await api.restore("AAAAAAAAAAAAAAAAAAAAAA", version: file.etag, ifMatch: nil).expect(.notFound).errorCode == "not_found")
            // Nothing changed.
            #expect(try await api.versions(file.id).count == 3)
            #expect(try await api.content(file.id) == Array("v3".utf8))
        }
    }

    @Test func aReadOnlyGrantCannotRestore() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("School", grantedTo: ["anna"], readOnly: true)
        let admin = Caller.administrator("admin")
        let file = try await env.storage.documents.createFile(named: "plan.txt", in: site.id, bytes: Array("v1".utf8), by: admin)
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let refused = try await anna.restore(file.id, version: file.etag, ifMatch: nil)
            try refused.expect(.forbidden)
            #expect(refused.errorCode == "read_only")
            #expect(try await anna.versions(file.id).count == 1)
        }
    }

    /// Someone else's lock for editing stops a restore (423 naming the holder); the holder's
    /// token lets it through, as with an upload.
    @Test func aLockedFileIsRestoredOnlyWithItsToken() async throws {
        try await LockTests.withTeam { team in
            let v2 = try await team.anna.put(team.file.id, contents: Array("v2".utf8), ifMatch: team.file.etag).expect(.ok).decode(Item.self)
            let grant = try await team.anna.lock(team.file.id, device: "site-laptop-3").expect(.created).decode(LockGrant.self)
            let refused = try await team.ben.restore(team.file.id, version: team.file.etag, ifMatch: v2.etag)
            try refused.expect(.init(code: 423))
            #expect(try refused.decode(ErrorResponse.self).lock?.holder == "anna")
            // Anna's other machine lacks the token too.
            try await team.annaElsewhere.restore(team.file.id, version: team.file.etag, ifMatch: nil).expect(.init(code: 423))
            #expect(try await team.ben.content(team.file.id) == Array("v2".utf8))

            let restored = try await team.anna.restore(team.file.id, version: team.file.etag, ifMatch: v2.etag, lockToken: grant.token)
                .expect(.ok).decode(Item.self)
            #expect(restored.lock?.id == grant.lock.id, "the lock stays")
            #expect(try await team.ben.content(team.file.id) == Array("v1".utf8))
        }
    }

    /// A blob two versions share is never deleted while one of them names it: not by the
    /// collector, and not when the file is renamed over another (whose versions then hold
    /// it); once no version names it, deleting the file deletes it.
    @Test func aSharedBlobLivesAsLongAsAVersionNamesIt() async throws {
        let env = try TestEnvironment()
        try await ContentTests.withSite(env) { api, site in
            let (file, versions) = try await Self.threeVersions(api, in: site)
            let restored = try await api.restore(file.id, version: versions[0].etag, ifMatch: nil).expect(.ok).decode(Item.self)
            let shared = try #require(try await Self.blobs(of: file.id, in: env).first)
            let blobs = env.storage.blobs

            // The collector, with no grace at all, keeps every named blob.
            let report = try await env.storage.collectUnreferencedBlobs(gracePeriod: -1)
            #expect(report.removed == 0)
            #expect(FileManager.default.fileExists(atPath: blobs.path(of: shared)))

            // Renamed over another file: the survivor takes the shared blob; the moved file's
            // other versions' blobs go, the shared one stays and reads.
            let target = try await api.createFile("target.txt", in: site.id, text: "target")
            let survivor = try await api.patch(file.id, ItemPatch(name: "target.txt", replace: true), ifMatch: restored.etag)
                .expect(.ok).decode(Item.self)
            #expect(survivor.id == target.id)
            #expect(FileManager.default.fileExists(atPath: blobs.path(of: shared)))
            #expect(try await api.content(target.id) == Array("v1".utf8))

            // Deleting the survivor lets the last version naming it go, and the blob with it.
            try await api.send(.delete, "/v1/items/\(target.id)").expect(.noContent)
            blobs.finishRemovals()  // they go after the answer
            #expect(!FileManager.default.fileExists(atPath: blobs.path(of: shared)))
        }
    }

    /// The blobs a file's versions name, newest version first (read from the store).
    static func blobs(of id: String, in env: TestEnvironment) async throws -> [String] {
        let row = try #require(env.storage.documents.ids.rowID(for: id))
        return try await env.storage.metadata.read { db in
            try db.texts(sql: "SELECT blob FROM versions WHERE item_id = ? ORDER BY id DESC", arguments: [row])
        }
    }
}

extension APIClient {
    func versions(_ id: String) async throws -> [Version] {
        try await send(.get, "/v1/items/\(id)/versions").expect(.ok).decode(VersionList.self).versions
    }

    func restore(_ id: String, version: String, ifMatch: String?, lockToken: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let ifMatch { headers[.ifMatch] = "\"\(ifMatch)\"" }
        if let lockToken { headers[Self.lockToken] = lockToken }
        return try await send(.post, "/v1/items/\(id)/versions/\(version)/restore", headers: headers)
    }
}
