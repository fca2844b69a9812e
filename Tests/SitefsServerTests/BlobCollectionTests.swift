import Foundation
import Testing
@testable import SitefsServerCore

/// Blobs nothing refers to (an upload whose transaction never committed, a deletion whose
/// files a crash kept) are collected once old enough; nothing a version names, nothing still
/// young, and no staging file still being written is touched. Runs on both stores.
struct BlobCollectionTests {
    private func place(_ path: String, agedBy seconds: TimeInterval) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data("stray".utf8).write(to: URL(fileURLWithPath: path))
        let when = Date().addingTimeInterval(-seconds)
        try FileManager.default.setAttributes([.modificationDate: when], ofItemAtPath: path)
    }

    @Test func onlyOldUnreferencedBlobsAndAbandonedStagingFilesGo() async throws {
        let env = try TestEnvironment()
        defer { env.remove() }
        let site = try await env.site("Harbour")
        let kept = try await env.storage.documents.createFile(named: "kept.txt", in: site.id, bytes: Array("v1".utf8), by: .administrator("admin"))
        let blobs = env.storage.blobs
        let orphan = BlobStore.newName(), young = BlobStore.newName()
        try place(blobs.path(of: orphan), agedBy: 2 * 3600)
        try place(blobs.path(of: young), agedBy: 60)
        let abandoned = blobs.staging.appendingPathComponent(BlobStore.newName()).path
        let inProgress = blobs.staging.appendingPathComponent(BlobStore.newName()).path
        try place(abandoned, agedBy: 2 * 3600)
        try place(inProgress, agedBy: 30)
        // The committed blob is as old as the orphan: age alone must not condemn it.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-2 * 3600)],
                                              ofItemAtPath: blobs.path(of: kept.etag))

        let report = try await env.storage.collectUnreferencedBlobs(gracePeriod: 3600)
        #expect(report == BlobCollectionReport(removed: 1, kept: 1))
        #expect(!FileManager.default.fileExists(atPath: blobs.path(of: orphan)))
        #expect(FileManager.default.fileExists(atPath: blobs.path(of: young)))
        #expect(FileManager.default.fileExists(atPath: blobs.path(of: kept.etag)))
        #expect(!FileManager.default.fileExists(atPath: abandoned))
        #expect(FileManager.default.fileExists(atPath: inProgress))
        let content = try await env.storage.documents.content(of: kept.id, version: nil, for: .administrator("admin"))
        #expect(try String(contentsOfFile: content.path, encoding: .utf8) == "v1")
    }
}
