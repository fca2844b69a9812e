import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

/// Tests against a real server on 127.0.0.1 (random port), with concurrent connections
/// (AsyncHTTPClient opens one per request in flight).
@Suite struct LiveServerTests {
    @Test func pagingNeitherSkipsNorRepeatsWhileTheFolderChanges() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        let admin = Caller.administrator("admin")
        var names: [String: String] = [:]  // id -> name
        var creationOrder: [String] = []
        for index in 0..<300 {
            let file = try await env.storage.documents.createFile(
                named: String(format: "doc %03d.txt", index), in: site.id, bytes: [UInt8(index % 256)], by: admin)
            names[file.id] = file.name
            creationOrder.append(file.id)
        }
        let original = names
        let ids = creationOrder
        // Items the mutator deletes; everything else must be listed exactly once.
        let deleted = Set(ids.enumerated().filter { $0.offset % 7 == 3 }.map(\.element))

        try await env.withLiveServer { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            // Another client mutates the folder concurrently: inserts, renames (including to
            // names that sort before and after the cursor), deletes.
            let mutator = Task {
                let mutatorAPI = try await APIClient.signedIn(client, user: "anna")
                for (step, id) in ids.enumerated() {
                    if deleted.contains(id) {
                        try await mutatorAPI.send(.delete, "/v1/items/\(id)").expect(.noContent)
                    } else if step % 5 == 0 {
                        let newName = (step % 2 == 0 ? "aaa " : "zzz ") + original[id]!
                        try await mutatorAPI.patch(id, ItemPatch(name: newName)).expect(.ok)
                    }
                    if step % 3 == 0 { _ = try await mutatorAPI.createFile("new \(step).txt", in: site.id, text: "n") }
                }
            }
            var listed: [String] = []
            var cursor: String?
            repeat {
                let page = try await api.children(site.id, limit: 25, cursor: cursor)
                listed += page.items.map(\.id)
                cursor = page.nextCursor
                try await Task.sleep(for: .milliseconds(5))
            } while cursor != nil
            try await mutator.value

            #expect(Set(listed).count == listed.count, "an item was listed twice")
            let survivors = Set(ids).subtracting(deleted)
            #expect(survivors.isSubset(of: Set(listed)), "an item that was there all along was skipped")
        }
    }

    @Test func ofConcurrentConditionalPutsExactlyOneWins() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withLiveServer { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            for round in 0..<3 {
                let base = try await api.createFile("contended \(round).txt", in: site.id, text: "base")
                let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            let body = Array(String(repeating: "writer \(writer) ", count: 20_000).utf8)
                            let response = try await api.put(base.id, contents: body, ifMatch: base.etag)
                            return (writer, Int(response.status.code))
                        }
                    }
                    return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
                }
                let winners = statuses.filter { $0.value == 200 }
                #expect(winners.count == 1, "statuses: \(statuses)")
                #expect(statuses.values.filter { $0 == 412 }.count == 7)
                let winner = try #require(winners.first?.key)
                let stored = try await api.content(base.id)
                #expect(stored == Array(String(repeating: "writer \(winner) ", count: 20_000).utf8))
                let versions = try await api.send(.get, "/v1/items/\(base.id)/versions").expect(.ok).decode(VersionList.self)
                #expect(versions.versions.count == 2)
            }
        }
    }

    @Test func everythingSurvivesARestartOnTheSameDataDirectory() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        let (token, file, folder) = try await env.withLiveServer { client in
            let api = try await APIClient.signedIn(client, user: "anna")
            let folder = try await api.createFolder("Plans", in: site.id)
            var file = try await api.createFile("plan.txt", in: folder.id, text: "v1")
            file = try await api.put(file.id, contents: Array("v2".utf8), ifMatch: file.etag).expect(.ok).decode(Item.self)
            return (api.token!, file, folder)
        }
        // A new process-equivalent: storage reopened from disk.
        let reopened = try TestEnvironment(directory: env.directory)
        try await reopened.withLiveServer { client in
            let api = APIClient(client, token: token)  // the session survives too
            #expect(try await api.item(file.id) == file)
            #expect(try await api.allChildren(folder.id).map(\.id) == [file.id])
            #expect(try await api.content(file.id) == Array("v2".utf8))
            let versions = try await api.send(.get, "/v1/items/\(file.id)/versions").expect(.ok).decode(VersionList.self)
            #expect(versions.versions.count == 2)
            // New ids do not reuse old ones, and the id key survived the reopening.
            let another = try await api.createFile("another.txt", in: folder.id, text: "x")
            #expect(![file.id, folder.id].contains(another.id))
        }
    }
}
