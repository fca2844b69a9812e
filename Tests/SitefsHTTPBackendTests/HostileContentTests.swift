import Foundation
import HTTPTypes
import Hummingbird
import SitefsHTTPBackend
import SitefsProvider
import Testing

/// A download into a file stops at what was promised: a server sending an endless body for
/// a file listed as 10 bytes once filled a disk (82 GB in 373 s; issue 17).
@Suite struct HostileContentTests {
    private let file = ItemIdentifier(site: "1", id: "7")

    /// A temporary file's descriptor, and the file's size after `body` used it.
    private func withDownloadFile(_ body: (Int32) throws -> Void) throws -> Int64 {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID().uuidString)").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        try body(descriptor)
        var info = stat()
        fstat(descriptor, &info)
        return Int64(info.st_size)
    }

    /// 1 MiB chunks forever, without a Content-Length (chunked): until the client hangs up.
    private static func endlessBody(_ request: Request) async throws -> Response {
        let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 1 << 20)
        return Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: "\"e\""],
                        body: ResponseBody { writer in
                            for _ in 0..<100_000 { try await writer.write(chunk) }  // 100 GB: the client must stop first
                            try await writer.finish(nil)
                        })
    }

    @Test func anEndlessBodyStopsAtThePromisedSize() async throws {
        let file = self.file
        try await withHostileServer(Self.endlessBody) { backend in
            let started = Date()
            let written = try withDownloadFile { descriptor in
                #expect(throws: ProviderError.self) {
                    _ = try backend.fetchContent(of: file, version: nil, range: nil, ifNoneMatch: nil,
                                                 into: .file(descriptor: descriptor, offset: 0, promisedSize: 10))
                }
            }
            #expect(written <= 10, "\(written) bytes written for a file promised as 10")
            #expect(Date().timeIntervalSince(started) < 10, "the download did not stop at once")
        }
    }

    @Test func aContentLengthLargerThanTheDiskIsRefusedBeforeAnythingIsWritten() async throws {
        let file = self.file
        // A Content-Length of 8 EiB: no disk has room for it.
        try await withHostileServer({ _ in
            Response(status: .ok, headers: [.contentType: "application/octet-stream", .contentLength: String(Int64.max)],
                     body: ResponseBody { writer in
                         try await writer.write(ByteBuffer(repeating: 0, count: 1 << 20))
                         try await writer.finish(nil)
                     })
        }) { backend in
            let written = try withDownloadFile { descriptor in
                do {
                    _ = try backend.fetchContent(of: file, version: nil, range: nil, ifNoneMatch: nil,
                                                 into: .file(descriptor: descriptor, offset: 0, promisedSize: 10))
                    Issue.record("an 8 EiB download was accepted")
                } catch {
                    #expect("\(error)".contains("No space left"), "\(error)")
                }
            }
            #expect(written == 0)
        }
    }

    @Test func aBodyWithinItsContentLengthIsDownloadedWhateverTheListingSaid() async throws {
        let file = self.file
        let content = String(repeating: "grown on the server ", count: 1000)
        try await withHostileServer({ _ in
            Response(status: .ok, headers: [.contentType: "application/octet-stream", .eTag: "\"e2\""],
                     body: .init(byteBuffer: ByteBuffer(string: content)))
        }) { backend in
            let written = try withDownloadFile { descriptor in
                let outcome = try backend.fetchContent(of: file, version: nil, range: nil, ifNoneMatch: nil,
                                                       into: .file(descriptor: descriptor, offset: 0, promisedSize: 10))
                guard case .fetched(let version, _) = outcome else {
                    Issue.record("not fetched")
                    return
                }
                #expect(version == "e2")
            }
            #expect(written == Int64(content.utf8.count))
        }
    }
}
