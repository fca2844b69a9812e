import Foundation
import Testing
@testable import SitefsHTTP
import Synchronization

/// Bodies stream from disk with a known length; the server checks them without buffering.
@Suite struct UploadTests {
    @Test func uploads50MBFileWithPut() throws {
        let length = 50 * 1024 * 1024
        let path = temporaryPath("upload")
        defer { removeTemporary(path) }
        try writePatternFile(path, length: length)
        let expected = "length=\(length) fnv=\(FNV1a64.hex(TestPattern.checksum(length: length)))"

        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            var request = HTTPRequest(method: .put, path: "/checksum", body: .file(path: path), appliesOverallTimeout: false)
            // Progress reports climb to the whole body (what `sitefs status` shows per upload).
            let reports = Mutex<[Int64]>([])
            request.onBodyProgress = { sent in reports.withLock { $0.append(sent) } }
            let response = try client.send(request)
            #expect(response.status == 200)
            #expect(text(response.body) == expected)
            let seen = reports.withLock { $0 }
            #expect(seen.count > 10 && seen.last == Int64(length) && seen.contains { $0 > 0 && $0 < Int64(length) })
            // libcurl would otherwise ask for 100-continue on a body this large.
            #expect(response.headers["x-saw-expect"] == "no")
        }
    }

    @Test(arguments: [HTTPMethod.post, .patch])
    func uploadsFileWithOtherMethods(method: HTTPMethod) throws {
        let length = 3_000_017
        let path = temporaryPath("upload-\(method.rawValue)")
        defer { removeTemporary(path) }
        try writePatternFile(path, length: length)
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: method, path: "/checksum", body: .file(path: path)))
            #expect(text(response.body) == "length=\(length) fnv=\(FNV1a64.hex(TestPattern.checksum(length: length)))")
        }
    }

    @Test func missingUploadFileIsALocalError() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .put, path: "/checksum", body: .file(path: "/nonexistent-dir/f")))
            } throws: { error in
                guard let error = error as? HTTPClientError, case .localIO(_, _, let code) = error else { return false }
                return code == ENOENT && !error.isTransient
            }
            #expect(server.handledRequests == 0)
        }
    }
}
