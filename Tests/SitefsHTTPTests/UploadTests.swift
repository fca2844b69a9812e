import Foundation
import SitefsTestSupport
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

    /// A file of at least `UploadSource.adviceThreshold` bytes leaves the page cache as it is
    /// sent; a smaller one keeps its pages, so an upload never writes out a snapshot that is
    /// not on disk yet. Both are fsynced first, as large staged snapshots are, so that advice,
    /// where given, drops their pages (on a disk filesystem; tmpfs keeps them anyway).
    @Test(arguments: [8 << 20, 64 << 10])
    func anUploadLeavesThePageCacheOnlyForALargeFile(length: Int) throws {
        let path = temporaryPath("paged-\(length)")
        defer { removeTemporary(path) }
        try writePatternFile(path, length: length)
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(fsync(descriptor) == 0)
        let pages = length / Int(getpagesize())
        #expect(try cachedPages(descriptor, length: length) == pages)  // just written: all cached
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .put, path: "/checksum", body: .file(path: path)))
            #expect(text(response.body) == "length=\(length) fnv=\(FNV1a64.hex(TestPattern.checksum(length: length)))")
        }
        let advised = Int64(length) >= UploadSource.adviceThreshold
        #expect(try cachedPages(descriptor, length: length) == (try advised && pagesCanBeDropped(besides: path) ? 0 : pages))
    }

    /// Whether the temporary directory's filesystem drops clean pages on advice (tmpfs
    /// cannot: its pages are the file).
    private func pagesCanBeDropped(besides path: String) throws -> Bool {
        let probe = path + ".probe"
        try writePatternFile(probe, length: 1 << 20)
        defer { removeTemporary(probe) }
        let descriptor = open(probe, O_RDONLY)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        _ = fsync(descriptor)
        _ = posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
        return try cachedPages(descriptor, length: 1 << 20) == 0
    }

    /// How many of the file's pages are in the page cache (mincore over a mapping, which
    /// itself reads nothing in).
    private func cachedPages(_ descriptor: Int32, length: Int) throws -> Int {
        let map = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, 0)
        guard let map, map != MAP_FAILED else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        defer { munmap(map, length) }
        var residency = [UInt8](repeating: 0, count: length / Int(getpagesize()))
        guard mincore(map, length, &residency) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        return residency.count { $0 & 1 != 0 }
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
