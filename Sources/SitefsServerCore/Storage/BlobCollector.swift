import Foundation

/// Removes blobs no version refers to: those of an upload whose transaction never
/// committed (the instance crashed between writing the bytes and recording them), and of a
/// deletion whose files were not removed after its commit (a crash again). Neither is ever
/// read: a version is visible only once committed, and then its blob is referenced.
///
/// A blob younger than `gracePeriod` is left alone, since its transaction may still be on
/// its way (through any instance sharing the folder); one older than that which no version
/// names can never become referenced, because new versions always get new blobs.
///
/// Then thumbnails whose blob is gone go too (`ThumbnailCache.removeOrphans`): normally
/// deleted with their blob, they outlive it only after a crash between the two or when a
/// thumbnail was being made while its blob was deleted.
struct BlobCollector: Sendable {
    let metadata: MetadataStore
    let blobs: BlobStore
    /// Names checked per query.
    static let batch = 500

    func collect(gracePeriod: TimeInterval, now: Date = Date()) async throws -> BlobCollectionReport {
        blobs.removeAbandonedStaging(now: now)
        let candidates = blobs.allBlobs().filter { now.timeIntervalSince($0.published) > gracePeriod }.map(\.name)
        var report = BlobCollectionReport()
        var start = 0
        while start < candidates.count {
            let names = Array(candidates[start..<min(start + Self.batch, candidates.count)])
            start += names.count
            let referenced = try await metadata.read { db in
                Set(try db.texts(
                    sql: "SELECT DISTINCT blob FROM versions WHERE blob IN (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))",
                    arguments: names))
            }
            let unreferenced = names.filter { !referenced.contains($0) }
            blobs.remove(unreferenced)
            report.removed += unreferenced.count
            report.kept += referenced.count
        }
        report.thumbnailsRemoved = ThumbnailCache(blobs: blobs).removeOrphans()
        return report
    }
}

/// What one garbage collection of the blob folder did.
public struct BlobCollectionReport: Sendable, Equatable {
    /// Blobs no version named, deleted.
    public var removed = 0
    /// Blobs old enough to be checked that a version still names.
    public var kept = 0
    /// Thumbnails (and failure marks) of blobs that are gone, deleted.
    public var thumbnailsRemoved = 0
}
