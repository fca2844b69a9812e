import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

/// Modes (`chmod`) and symbolic links on the server: kept with the item, in listings, item
/// reads and the change feed; a link's content is its target. Runs on SQLite, and on
/// PostgreSQL with SITEFS_TEST_STORE=postgres, like every store test.
@Suite struct ModesAndLinksTests {
    @Test func aModeIsKeptWithTheItemAndReportedByTheFeedWithoutANewVersion() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            let file = try await api.createFile("run.sh", in: site.id, text: "echo hi")
            #expect(file.mode == nil, "none set yet")
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            let changed = try await api.patch(file.id, ItemPatch(mode: 0o755)).expect(.ok).decode(Item.self)
            #expect(changed.mode == 0o755)
            #expect(changed.etag == file.etag, "a mode is no new version")
            #expect(changed.modifiedAt == file.modifiedAt)
            #expect(try await api.item(file.id).mode == 0o755)
            #expect(try await api.allChildren(site.id).first { $0.id == file.id }?.mode == 0o755)
            let feed = try await api.send(.get, "/v1/changes?cursor=\(start)").expect(.ok).decode(ChangePage.self)
            let reported = feed.changes.contains { change in
                if case .item(let item) = change { return item.id == file.id && item.mode == 0o755 }
                return false
            }
            #expect(reported, "the feed reports the chmod")
            // A folder's too; a new upload keeps the file's mode.
            let folder = try await api.createFolder("private", in: site.id)
            #expect(try await api.patch(folder.id, ItemPatch(mode: 0o700)).expect(.ok).decode(Item.self).mode == 0o700)
            let saved = try await api.put(file.id, contents: Array("echo bye".utf8), ifMatch: file.etag).expect(.ok).decode(Item.self)
            #expect(saved.mode == 0o755)
        }
    }

    @Test func modesOutOfRangeAndOnSitesAreRefused() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            let file = try await api.createFile("a.txt", in: site.id, text: "a")
            for mode in [-1, 0o10000, Int(Int32.max)] {
                let response = try await api.patch(file.id, ItemPatch(mode: mode))
                try response.expect(.badRequest)
                #expect(response.errorCode == "invalid_mode")
            }
            try await api.patch(site.id, ItemPatch(mode: 0o700)).expect(.forbidden)
            #expect(try await api.item(file.id).mode == nil)
        }
    }

    @Test func aReadOnlyGrantCannotChangeAMode() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("School", grantedTo: ["anna"], readOnly: true)
        let file = try await env.storage.documents.createFile(named: "plan.pdf", in: site.id, bytes: [1], by: .administrator("admin"))
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            try await anna.patch(file.id, ItemPatch(mode: 0o777)).expect(.forbidden)
        }
    }

    @Test func aModeNeedsNoLockTokenButARenameOfTheLockedFileDoes() async throws {
        try await LockTests.withTeam { team in
            try await team.anna.lock(team.file.id, timeout: 300).expect(.created)
            #expect(try await team.ben.patch(team.file.id, ItemPatch(mode: 0o600)).expect(.ok).decode(Item.self).mode == 0o600)
            try await team.ben.patch(team.file.id, ItemPatch(name: "other.odt", mode: 0o644)).expect(.init(code: 423))
            #expect(try await team.anna.item(team.file.id).mode == 0o600)
        }
    }

    @Test func aLinkKeepsItsTargetAsGivenAndReadsAsItsContent() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            let target = "../Plans/level 1 (rev B).pdf"
            let link = try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: "latest", symlinkTarget: target))
                .expect(.created).decode(Item.self)
            #expect(link.kind == .symlink && link.symlinkTarget == target)
            #expect(link.size == Int64(target.utf8.count))
            #expect(link.capabilities == [.read, .rename, .delete])
            #expect(try await api.content(link.id) == Array(target.utf8))
            let listed = try #require(try await api.allChildren(site.id).first { $0.id == link.id })
            #expect(listed.kind == .symlink && listed.symlinkTarget == target)
            // Renamed and deleted as a file is; written as one, it is not.
            #expect(try await api.patch(link.id, ItemPatch(name: "current")).expect(.ok).decode(Item.self).symlinkTarget == target)
            try await api.put(link.id, contents: [1], ifMatch: nil).expect(.badRequest)
            try await api.send(.put, "/v1/items/\(link.id)/lock", json: LockRequestBody(device: "", application: "", timeout: nil))
                .expect(.badRequest)
            try await api.send(.delete, "/v1/items/\(link.id)").expect(.noContent)
            try await api.send(.get, "/v1/items/\(link.id)").expect(.notFound)
        }
    }

    @Test func badTargetsAndNamesTakenAreRefused() async throws {
        try await ContentTests.withSite(try TestEnvironment()) { api, site in
            for target in ["", "nul\u{0}byte", String(repeating: "x", count: 4096)] {
                let response = try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: "bad", symlinkTarget: target))
                try response.expect(.badRequest)
                #expect(response.errorCode == "invalid_target", "\(target.prefix(10).debugDescription)")
            }
            let longest = String(repeating: "x", count: 4095)
            _ = try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: "long", symlinkTarget: longest))
                .expect(.created)
            _ = try await api.createFile("taken", in: site.id, text: "x")
            try await api.send(.post, "/v1/items/\(site.id)/children", json: NewFolder(name: "taken", symlinkTarget: "x"))
                .expect(.conflict)
            var noTarget = NewFolder(name: "none")
            noTarget.kind = .symlink
            #expect(try await api.send(.post, "/v1/items/\(site.id)/children", json: noTarget).expect(.badRequest).errorCode == "invalid_target")
        }
    }
}
