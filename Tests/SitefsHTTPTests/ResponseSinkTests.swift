import Foundation
import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Bodies land where the caller asked: memory within a cap, a file at an offset, or chunks.
@Suite struct ResponseSinkTests {
    @Test func memorySinkAcceptsExactlyTheLimit() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/bytes/1000"), into: .memory(limit: 1000))
            #expect(response.body == TestPattern.bytes(at: 0, count: 1000))
        }
    }

    @Test func memorySinkFailsPastTheLimit() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .get, path: "/bytes/5000"), into: .memory(limit: 1000))
            } throws: { error in
                guard let error = error as? HTTPClientError, case .responseTooLarge(limit: 1000) = error else { return false }
                return !error.isTransient
            }
        }
    }

    @Test func defaultMemoryLimitIs16MiB() throws {
        #expect(ResponseSink.defaultMemoryLimit == 16 * 1024 * 1024)
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .get, path: "/bytes/\(16 * 1024 * 1024 + 1)"))
            } throws: { error in
                guard case .responseTooLarge(let limit) = error as? HTTPClientError else { return false }
                return limit == ResponseSink.defaultMemoryLimit
            }
        }
    }

    @Test func downloads50MBIntoAFileAtAnOffset() throws {
        let length = 50 * 1024 * 1024
        let offset = 4096
        let path = temporaryPath("download")
        defer { removeTemporary(path) }
        let prefix = [UInt8](repeating: 0xee, count: offset)
        try Data(prefix).write(to: URL(fileURLWithPath: path))

        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let request = HTTPRequest(method: .get, path: "/bytes/\(length)", appliesOverallTimeout: false)
            let response = try client.send(request, into: .file(path: path, offset: Int64(offset)))
            #expect(response.status == 200)
            #expect(response.bodyLength == Int64(length))
            #expect(response.body.isEmpty)
        }
        #expect(fileSize(path) == offset + length)
        let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readData(ofLength: offset)
        #expect(Array(head) == prefix)
        #expect(try checksumOfFile(path, offset: offset, length: length) == TestPattern.checksum(length: length))
    }

    @Test func downloadsIntoADescriptor() throws {
        let path = temporaryPath("descriptor")
        defer { removeTemporary(path) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            _ = try client.send(HTTPRequest(method: .get, path: "/bytes/300000"), into: .fileDescriptor(descriptor, offset: 100))
        }
        #expect(fileSize(path) == 300_100)
        #expect(try checksumOfFile(path, offset: 100, length: 300_000) == TestPattern.checksum(length: 300_000))
    }

    @Test func errorBodyNeverReachesTheFile() throws {
        let path = temporaryPath("error")
        defer { removeTemporary(path) }
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/status/404"), into: .file(path: path, offset: 0))
            #expect(response.status == 404)
            #expect(text(response.body) == "{\"error\":\"status 404\"}")
        }
        #expect(fileSize(path) == 0)
    }

    @Test func chunkSinkSeesEveryByte() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            var hash = FNV1a64()
            var total = 0
            let response = try client.send(HTTPRequest(method: .get, path: "/bytes/1000000"), into: .chunks { chunk in
                hash.update(chunk)
                total += chunk.count
            })
            #expect(response.bodyLength == 1_000_000)
            #expect(total == 1_000_000)
            #expect(hash.value == TestPattern.checksum(length: 1_000_000))
        }
    }

    /// A sink that stops the transfer itself (a reader gone) cancels it: not a failure that
    /// could count against the server's reachability.
    @Test func aChunkSinkThrowingCancellationCancels() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            var received = 0
            #expect {
                try client.send(HTTPRequest(method: .get, path: "/bytes/1000000"), into: .chunks { chunk in
                    received += chunk.count
                    if received > 1000 { throw CancellationError() }
                })
            } throws: { error in
                guard case .cancelled = error as? HTTPClientError else { return false }
                return true
            }
            #expect(received < 1_000_000)
            let after = try client.send(HTTPRequest(method: .get, path: "/bytes/10"))
            #expect(after.body.count == 10)
        }
    }

    @Test func throwingChunkSinkAbortsWithItsError() throws {
        struct Enough: Error {}
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .get, path: "/bytes/1000000"), into: .chunks { _ in throw Enough() })
            } throws: { error in
                guard case .sinkFailed(let inner) = error as? HTTPClientError else { return false }
                return inner is Enough
            }
            // The handle is still usable afterwards.
            let after = try client.send(HTTPRequest(method: .get, path: "/bytes/10"))
            #expect(after.body.count == 10)
        }
    }

    @Test func unwritableDownloadPathIsALocalError() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .get, path: "/bytes/10"), into: .file(path: "/nonexistent-dir/x", offset: 0))
            } throws: { error in
                guard let error = error as? HTTPClientError, case .localIO(_, _, let code) = error else { return false }
                return code == ENOENT && !error.isTransient
            }
        }
    }
}
