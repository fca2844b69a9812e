import Foundation
import HummingbirdTesting
import SitefsAPI
import SitefsTestSupport
import Testing
@testable import SitefsServerCore

@Suite struct ChangeFeedTests {
    @Test func noCursorGivesTheCurrentCursorAndNoChanges() async throws {
        try await NamespaceTests.withSite { api, site in
            _ = try await api.createFolder("Before", in: site.id)
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self)
            #expect(start.changes.isEmpty && !start.hasMore)
            let again = try await api.send(.get, "/v1/changes?cursor=\(start.nextCursor)").expect(.ok).decode(ChangePage.self)
            #expect(again.changes.isEmpty)
            // Cursors are sealed afresh each time (CursorTests): the same position reads the same.
            let third = try await api.send(.get, "/v1/changes?cursor=\(again.nextCursor)").expect(.ok).decode(ChangePage.self)
            #expect(third.changes.isEmpty && !third.hasMore)
        }
    }

    @Test func createsEditsRenamesAndDeletesAppearOncePerItem() async throws {
        try await NamespaceTests.withSite { api, site in
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            let folder = try await api.createFolder("Plans", in: site.id)
            var file = try await api.createFile("a.txt", in: folder.id, text: "1")
            file = try await api.put(file.id, contents: Array("22".utf8), ifMatch: file.etag).expect(.ok).decode(Item.self)
            file = try await api.patch(file.id, ItemPatch(name: "b.txt")).expect(.ok).decode(Item.self)
            let doomed = try await api.createFile("gone.txt", in: site.id, text: "x")
            try await api.send(.delete, "/v1/items/\(doomed.id)").expect(.noContent)

            let page = try await api.send(.get, "/v1/changes?cursor=\(start)").expect(.ok).decode(ChangePage.self)
            #expect(page.changes.count == 3)
            #expect(page.changes.contains(.item(folder)))
            #expect(page.changes.contains(.item(file)))  // latest state, once
            #expect(page.changes.contains(.deleted(id: doomed.id, siteID: site.id)))
            let after = try await api.send(.get, "/v1/changes?cursor=\(page.nextCursor)").expect(.ok).decode(ChangePage.self)
            #expect(after.changes.isEmpty)
        }
    }

    /// A folder's delete reports every item that went with it, once each, and leaves none of
    /// their blobs.
    @Test func aFolderDeleteReportsEachItemBelowIt() async throws {
        let env = try TestEnvironment()
        try await NamespaceTests.withSite(env) { api, site in
            let folder = try await api.createFolder("Plans", in: site.id)
            let inner = try await api.createFolder("Old", in: folder.id)
            let files = [try await api.createFile("a.txt", in: folder.id, text: "a"),
                         try await api.createFile("b.txt", in: inner.id, text: "b")]
            _ = try await api.put(files[0].id, contents: Array("a2".utf8), ifMatch: files[0].etag).expect(.ok)
            let kept = try await api.createFile("kept.txt", in: site.id, text: "kept")
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor

            try await api.send(.delete, "/v1/items/\(folder.id)").expect(.noContent)
            let page = try await api.send(.get, "/v1/changes?cursor=\(start)").expect(.ok).decode(ChangePage.self)
            let gone = [folder.id, inner.id] + files.map(\.id)
            let deleted = page.changes.compactMap { change -> String? in
                guard case .deleted(let id, let siteID) = change, siteID == site.id else { return nil }
                return id
            }
            #expect(deleted.sorted() == gone.sorted() && page.changes.count == gone.count, "\(page.changes)")
            env.storage.blobs.finishRemovals()
            let blobs = env.directory.appendingPathComponent("blobs").path
            #expect(NamespaceTests.fileCount(under: blobs) == 1, "only kept.txt's blob is left")
            #expect(try await api.content(kept.id) == Array("kept".utf8))
        }
    }

    @Test func aLongPollIsAnsweredByTheNextChangeAndOtherwiseAtItsEnd() async throws {
        let env = try TestEnvironment()
        try await NamespaceTests.withSite(env) { api, site in
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            let commits = env.storage.documents.metadata.commits
            // Held for up to 30 s: only a change made meanwhile can answer it with something.
            let poll = Task { try await api.send(.get, "/v1/changes?cursor=\(start)&wait=30").expect(.ok).decode(ChangePage.self) }
            _ = await eventually(every: .milliseconds(5)) { commits.waiting != 0 }
            #expect(commits.waiting == 1, "the long-poll never began to wait")
            let file = try await api.createFile("while-waiting.txt", in: site.id, text: "x")
            let page = try await poll.value
            #expect(page.changes == [.item(file)])
            #expect(commits.waiting == 0)

            // Nothing changes: an empty page with the same position, once the wait is over.
            let quiet = try await api.send(.get, "/v1/changes?cursor=\(page.nextCursor)&wait=1").expect(.ok).decode(ChangePage.self)
            #expect(quiet.changes.isEmpty && !quiet.hasMore)
            let after = try await api.send(.get, "/v1/changes?cursor=\(quiet.nextCursor)").expect(.ok).decode(ChangePage.self)
            #expect(after.changes.isEmpty)
            try await api.send(.get, "/v1/changes?cursor=\(start)&wait=31").expect(.badRequest)
            try await api.send(.get, "/v1/changes?cursor=\(start)&wait=-1").expect(.badRequest)
        }
    }

    @Test func recursiveDeleteReportsEveryItem() async throws {
        try await NamespaceTests.withSite { api, site in
            let top = try await api.createFolder("Top", in: site.id)
            let inner = try await api.createFolder("Inner", in: top.id)
            let file = try await api.createFile("f.txt", in: inner.id, text: "f")
            let start = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            try await api.send(.delete, "/v1/items/\(top.id)").expect(.noContent)
            let page = try await api.send(.get, "/v1/changes?cursor=\(start)").expect(.ok).decode(ChangePage.self)
            #expect(Set(page.changes.map { change -> String in
                if case .deleted(let id, _) = change { return id } else { return "not deleted" }
            }) == [top.id, inner.id, file.id])
        }
    }

    @Test func callersSeeOnlyTheirSites() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        try await env.user("ben")
        let annas = try await env.site("Harbour", grantedTo: ["anna"])
        let bens = try await env.site("Secret", grantedTo: ["ben"])
        try await env.withRouter { client in
            let anna = try await APIClient.signedIn(client, user: "anna")
            let ben = try await APIClient.signedIn(client, user: "ben")
            let start = try await anna.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            _ = try await ben.createFile("secret.txt", in: bens.id, text: "s")
            let mine = try await anna.createFile("mine.txt", in: annas.id, text: "m")
            let page = try await anna.send(.get, "/v1/changes?cursor=\(start)").expect(.ok).decode(ChangePage.self)
            #expect(page.changes == [.item(mine)])
            try await anna.send(.get, "/v1/changes?cursor=garbage").expect(.badRequest)
        }
    }

    @Test func longFeedsArriveInBatches() async throws {
        let env = try TestEnvironment()
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            var cursor = try await api.send(.get, "/v1/changes").expect(.ok).decode(ChangePage.self).nextCursor
            for index in 0..<(DocumentStore.changeBatch + 50) {
                _ = try await env.storage.documents.createFolder(named: "f\(index)", in: site.id, by: .administrator("admin"))
            }
            var seen = Set<String>()
            var calls = 0
            while true {
                let page = try await api.send(.get, "/v1/changes?cursor=\(cursor)").expect(.ok).decode(ChangePage.self)
                calls += 1
                for case .item(let item) in page.changes { seen.insert(item.name) }
                cursor = page.nextCursor
                if !page.hasMore { break }
            }
            #expect(calls == 2)
            #expect(seen.count == DocumentStore.changeBatch + 50)
        }
    }

    /// A long-poll wakes for commits in the sites its caller sees, and sleeps through the
    /// rest: with many mounts waiting, a save wakes the few who see its site.
    @Test func aCommitWakesOnlyTheLongPollsOfItsSites() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        try await env.user("anna")
        try await env.user("ben")
        let harbour = try await env.site("Harbour", grantedTo: ["anna"])
        let secret = try await env.site("Secret", grantedTo: ["ben"])
        let (accounts, documents) = (env.storage.accounts, env.storage.documents)
        let anna = try await accounts.caller(forToken: try await accounts.signIn(username: "anna", password: "secret").token)
        let start = try await documents.changes(since: nil, for: anna).nextCursor
        let commits = env.storage.metadata.commits
        let poll = Task { try await documents.changes(since: start, for: anna, waitingUpTo: .seconds(20)) }
        #expect(await eventually { commits.waiting == 1 })
        let before = commits.wakeups
        // This instance rings the signal as the write returns: anna's wait is left alone.
        _ = try await documents.createFolder(named: "hidden", in: secret.id, by: .administrator("admin"))
        #expect(commits.wakeups == before)
        #expect(commits.waiting == 1)
        let news = try await documents.createFolder(named: "news", in: harbour.id, by: .administrator("admin"))
        let page = try await poll.value
        #expect(page.changes.map { change -> String in
            if case .item(let item) = change { return item.id } else { return "deleted" }
        } == [news.id])
        #expect(commits.wakeups >= before + 1)
    }
}
