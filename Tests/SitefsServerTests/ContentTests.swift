import Foundation
import HummingbirdTesting
import SitefsAPI
import Testing
@testable import SitefsServerCore

@Suite struct ContentTests {
    /// A signed-in client and a site to work in.
    static func withSite(_ env: TestEnvironment, _ body: @Sendable @escaping (APIClient, Item) async throws -> Void) async throws {
        try await env.user("anna")
        let site = try await env.site("Harbour", grantedTo: ["anna"])
        try await env.withRouter { client in
            try await body(try await APIClient.signedIn(client, user: "anna"), site)
        }
    }

    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)

    @Test func uploadAndDownloadRoundTripWithETag() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            let contents = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let file = try await api.createFile("drawing.dwg", in: site.id, contents: contents)
            #expect(file.size == 300_000)
            let response = try await api.send(.get, "/v1/items/\(file.id)/content").expect(.ok)
            #expect(response.bytes == contents)
            #expect(response.headers[.eTag] == "\"\(file.etag)\"")
            #expect(response.headers[.contentLength] == "300000")
            #expect(response.headers[.acceptRanges] == "bytes")
            let empty = try await api.createFile("empty.txt", in: site.id, contents: [])
            #expect(try await api.content(empty.id) == [])
        }
    }

    @Test func rangesGive206WithContentRange() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            let file = try await api.createFile("a.txt", in: site.id, contents: Self.alphabet)
            let cases: [(String, String, String)] = [
                ("bytes=0-3", "abcd", "bytes 0-3/26"),
                ("bytes=10-", "klmnopqrstuvwxyz", "bytes 10-25/26"),
                ("bytes=-4", "wxyz", "bytes 22-25/26"),
                ("bytes=20-1000", "uvwxyz", "bytes 20-25/26"),
                ("bytes=-100", "abcdefghijklmnopqrstuvwxyz", "bytes 0-25/26"),
            ]
            for (range, expected, contentRange) in cases {
                let response = try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.range: range])
                try response.expect(.partialContent)
                #expect(response.text == expected, "\(range)")
                #expect(response.headers[.contentRange] == contentRange)
                #expect(response.headers[.contentLength] == String(expected.utf8.count))
            }
            // Several ranges: the whole content, as RFC 9110 allows.
            let multi = try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.range: "bytes=0-1,5-6"])
            try multi.expect(.ok)
            #expect(multi.bytes == Self.alphabet)
            for unsatisfiable in ["bytes=26-", "bytes=100-200", "bytes=-0"] {
                let response = try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.range: unsatisfiable])
                try response.expect(.rangeNotSatisfiable)
                #expect(response.headers[.contentRange] == "bytes */26")
            }
            try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.range: "bytes=5-2"]).expect(.badRequest)
        }
    }

    @Test func ifNoneMatchGives304OnlyForTheCurrentVersion() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            let file = try await api.createFile("a.txt", in: site.id, text: "one")
            let hit = try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.ifNoneMatch: "\"\(file.etag)\""])
            try hit.expect(.notModified)
            #expect(hit.body.readableBytes == 0)
            #expect(hit.headers[.eTag] == "\"\(file.etag)\"")
            try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.ifNoneMatch: "W/\"\(file.etag)\""]).expect(.notModified)
            try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.ifNoneMatch: "\"other\""]).expect(.ok)
            try await api.put(file.id, contents: Array("two".utf8), ifMatch: file.etag).expect(.ok)
            let stale = try await api.send(.get, "/v1/items/\(file.id)/content", headers: [.ifNoneMatch: "\"\(file.etag)\""])
            try stale.expect(.ok)
            #expect(stale.text == "two")
        }
    }

    @Test func conditionalPutMakesANewVersionOrFailsWith412() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            let v1 = try await api.createFile("report.txt", in: site.id, text: "first")
            let updated = try await api.put(v1.id, contents: Array("second!".utf8), ifMatch: v1.etag).expect(.ok)
            let v2 = try updated.decode(Item.self)
            #expect(v2.id == v1.id && v2.etag != v1.etag && v2.size == 7)
            #expect(updated.headers[.eTag] == "\"\(v2.etag)\"")
            #expect(try await api.content(v1.id) == Array("second!".utf8))

            let conflict = try await api.put(v1.id, contents: Array("lost?".utf8), ifMatch: v1.etag)
            try conflict.expect(.preconditionFailed)
            let body = try conflict.decode(ErrorResponse.self)
            #expect(body.error.code == "version_mismatch")
            #expect(body.item == v2)
            #expect(try await api.content(v1.id) == Array("second!".utf8))

            // `*` matches any existing version; no If-Match is unconditional.
            try await api.send(.put, "/v1/items/\(v1.id)/content", headers: [.ifMatch: "*"], body: Array("third".utf8)).expect(.ok)
            try await api.put(v1.id, contents: Array("fourth".utf8), ifMatch: nil).expect(.ok)
            try await api.send(.put, "/v1/items/\(v1.id)/content", headers: [.ifMatch: "W/\"x\""], body: [1]).expect(.preconditionFailed)
        }
    }

    @Test func versionsAreKeptAndReadable() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            var item = try await api.createFile("plan.txt", in: site.id, text: "v1")
            var etags = [item.etag]
            for text in ["v2", "v3 longer"] {
                item = try await api.put(item.id, contents: Array(text.utf8), ifMatch: item.etag).expect(.ok).decode(Item.self)
                etags.append(item.etag)
            }
            let versions = try await api.send(.get, "/v1/items/\(item.id)/versions").expect(.ok).decode(VersionList.self).versions
            #expect(versions.map(\.etag) == etags.reversed())
            #expect(versions.map(\.size) == [9, 2, 2])
            #expect(versions.allSatisfy { $0.modifiedBy == "anna" })
            #expect(try await api.send(.get, "/v1/items/\(item.id)/content?version=\(etags[0])").expect(.ok).text == "v1")
            let old = try await api.send(.get, "/v1/items/\(item.id)/content?version=\(etags[1])", headers: [.range: "bytes=1-"])
            #expect(try old.expect(.partialContent).text == "2")
            #expect(old.headers[.eTag] == "\"\(etags[1])\"")
            let missing = try await api.send(.get, "/v1/items/\(item.id)/content?version=nope")
            try missing.expect(.notFound)
            #expect(missing.errorCode == "no_such_version")
            try await api.send(.get, "/v1/items/\(site.id)/versions").expect(.badRequest)
        }
    }

    @Test func contentRoutesRefuseFolders() async throws {
        try await Self.withSite(try TestEnvironment()) { api, site in
            let folder = try await api.createFolder("Plans", in: site.id)
            let get = try await api.send(.get, "/v1/items/\(folder.id)/content")
            try get.expect(.badRequest)
            #expect(get.errorCode == "not_a_file")
            try await api.put(folder.id, contents: [1], ifMatch: nil).expect(.badRequest)
            let file = try await api.createFile("a.txt", in: folder.id, text: "x")
            let intoFile = try await api.send(.post, "/v1/items/\(file.id)/children?name=b.txt", body: [1])
            try intoFile.expect(.badRequest)
            #expect(intoFile.errorCode == "not_a_folder")
        }
    }

    @Test func uploadsOverTheLimitAre413AndLeaveNothingBehind() async throws {
        let env = try TestEnvironment(maximumUploadBytes: 1000)
        try await Self.withSite(env) { api, site in
            let response = try await api.send(.post, "/v1/items/\(site.id)/children?name=big.bin", body: Array(repeating: 7, count: 1001))
            try response.expect(.contentTooLarge)
            #expect(response.errorCode == "too_large")
            #expect(try await api.allChildren(site.id).isEmpty)
            let small = try await api.createFile("small.bin", in: site.id, contents: Array(repeating: 1, count: 1000))
            try await api.put(small.id, contents: Array(repeating: 2, count: 5000), ifMatch: small.etag).expect(.contentTooLarge)
            #expect(try await api.content(small.id) == Array(repeating: 1, count: 1000))
            let staging = try FileManager.default.contentsOfDirectory(atPath: env.directory.appendingPathComponent("tmp").path)
            #expect(staging.isEmpty)
        }
    }
}
