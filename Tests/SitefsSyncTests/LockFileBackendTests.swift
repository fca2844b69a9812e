import Foundation
import SitefsAPI
import SitefsProvider
@testable import SitefsSync
import SitefsTestSupport
import Testing

/// Others' locks as the mount shows them (`LockFileBackend`): LibreOffice's record, the lock
/// file beside its document in listings and the change feed, read-only.
@Suite struct LockFileBackendTests {
    private let lock = ProviderLock(holder: "anna", holderName: "Anna, Berger; \\site", device: "desk-a", application: "LibreOffice",
                                    since: Timestamp(secondsSinceEpoch: 1_795_862_040), expires: nil, heldHere: false)

    @Test func theRecordIsLibreOfficesWithItsSeparatorsEscaped() {
        let record = String(decoding: OfficeLockFile.content(for: lock, timeZone: TimeZone(identifier: "UTC")!), as: UTF8.self)
        #expect(record == #"Anna\, Berger\; \\site,anna,desk-a,28.11.2026 10:34,sitefs:desk-a;"#)
        #expect(OfficeLockFile.document(of: ".~lock.report.odt#") == "report.odt")
        #expect(OfficeLockFile.document(of: ".~lock.#") == nil)
        #expect(OfficeLockFile.document(of: "report.odt") == nil)
        #expect(OfficeLockFile.name(for: String(repeating: "x", count: 250)) == nil, "longer than a name may be")
    }

    @Test func aLockedFileListsWithItsLockFileAndTheFeedAddsAndRemovesIt() throws {
        let backend = InMemoryBackend()
        let site = backend.addSite("Harbour")
        let file = backend.add("report.odt", in: site, kind: .file)
        let shown = LockFileBackend(backend, seen: SeenLocks(), timeZone: TimeZone(identifier: "UTC")!)
        let start = try shown.changes(since: nil).next

        backend.lockOnServer(file, by: "Anna Berger")
        let page = try shown.children(of: site, after: nil, limit: 10)
        #expect(page.items.map(\.name) == ["report.odt", ".~lock.report.odt#"])
        let lockFile = page.items[1]
        #expect(lockFile.identifier == .lockFile(of: file) && lockFile.capabilities == [.read])
        #expect(try shown.item(lockFile.identifier) == lockFile)
        #expect(shown.seen.lock(of: file)?.lock.holderName == "Anna Berger")

        // Read by range, as the kernel reads.
        let pieces = PieceCollector()
        _ = try shown.fetchContent(of: lockFile.identifier, version: nil, range: 0...5, ifNoneMatch: nil,
                                   into: .pieces(limit: 6, receive: { pieces.append($0) }))
        #expect(String(decoding: pieces.bytes, as: UTF8.self) == "Anna B")
        #expect(throws: ProviderError.self) { try shown.delete(lockFile.identifier, baseVersion: nil) }

        backend.unlockOnServer(file)
        let batch = try shown.changes(since: start)
        #expect(batch.changes.last == .deleted(.lockFile(of: file)), "\(batch.changes)")
        #expect(throws: ProviderError.self) { _ = try shown.item(lockFile.identifier) }
        #expect(try shown.children(of: site, after: nil, limit: 10).items.map(\.name) == ["report.odt"])
    }

    @Test func aLockHeldHereShowsNoLockFile() throws {
        let backend = InMemoryBackend()
        let site = backend.addSite("Harbour")
        let file = backend.add("report.odt", in: site, kind: .file)
        let shown = LockFileBackend(backend, seen: SeenLocks())
        _ = try shown.lock(file, LockRequest(holderName: "me", device: "here", application: "LibreOffice", timeout: .seconds(60)))
        #expect(try shown.children(of: site, after: nil, limit: 10).items.map(\.name) == ["report.odt"])
        #expect(shown.seen.all.isEmpty)
    }

    private final class PieceCollector: @unchecked Sendable {
        var bytes: [UInt8] = []
        func append(_ piece: UnsafeRawBufferPointer) { bytes += piece }
    }
}
