import Foundation
import SitefsAPI
import SitefsHTTPBackend
import SitefsProvider
import SitefsTestSupport
import Synchronization
import Testing

/// `HTTPDocumentBackend`'s versions and restore against a real `sitefs-server`: the list as
/// the server keeps it, a restore that makes an old version the newest, its condition, and
/// a lock for editing it honours (the holder's restore carries its token).
@Suite struct VersionBackendTests {
    typealias Fixture = LockBackendTests.Fixture

    /// The file's whole content, as `backend` downloads it.
    static func content(_ file: ItemIdentifier, _ backend: HTTPDocumentBackend, version: String? = nil) throws -> String {
        let bytes = Mutex<[UInt8]>([])
        _ = try backend.fetchContent(of: file, version: version, range: nil, ifNoneMatch: nil,
                                     into: .pieces(limit: 1 << 20) { piece in bytes.withLock { $0 += Array(piece) } })
        return String(decoding: bytes.withLock { $0 }, as: UTF8.self)
    }

    @Test func anOldVersionIsRestoredAsTheNewest() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna"), ben = try fixture.backend("ben")
        let v1 = try anna.item(fixture.file)
        let v2 = try ben.modifyContent(of: fixture.file, baseVersion: v1.version, contentsOf: try fixture.contents("v2, by ben"))

        let versions = try anna.versions(of: fixture.file)
        #expect(versions.map(\.identifier) == [v2.version, v1.version])
        #expect(versions.map(\.size) == [10, 2])
        #expect(versions.map(\.modifiedBy) == ["ben", "anna"])
        #expect(versions[0].modified == v2.modified)

        let restored = try anna.restore(fixture.file, version: v1.version, baseVersion: v2.version)
        #expect(restored.identifier == fixture.file && restored.size == 2 && restored.modifiedBy == "anna")
        #expect(restored.version != v1.version && restored.version != v2.version)
        #expect(try Self.content(fixture.file, ben) == "v1")
        #expect(try Self.content(fixture.file, ben, version: v2.version) == "v2, by ben", "the replaced content stays a version")
        #expect(try ben.versions(of: fixture.file).map(\.identifier) == [restored.version, v2.version, v1.version])

        // Based on a version that is no longer current: refused with the item as it is.
        let stale = Self.failure { _ = try ben.restore(fixture.file, version: v2.version, baseVersion: v2.version) }
        guard case .versionMismatch(let current) = stale else { Issue.record("a stale restore: \(String(describing: stale))"); return }
        #expect(current?.version == restored.version)
        // A version the file never had.
        let unknown = Self.failure { _ = try ben.restore(fixture.file, version: "0123456789abcdef0123456789abcdef", baseVersion: nil) }
        guard case .refused(404, "no_such_version", _) = unknown else { Issue.record("an unknown version: \(String(describing: unknown))"); return }
        // A site keeps no versions.
        let site = Self.failure { _ = try anna.versions(of: fixture.site) }
        guard case .refused(400, "not_a_file", _) = site else { Issue.record("a site's versions: \(String(describing: site))"); return }
    }

    /// The error `body` throws; nil when it throws none.
    static func failure(_ body: () throws -> Void) -> ProviderError? {
        do {
            try body()
            return nil
        } catch {
            return error as? ProviderError
        }
    }

    /// Someone else's lock stops a restore, naming the holder; the holder's own restore
    /// carries the token and goes through.
    @Test func aLockedFileIsRestoredOnlyByItsHolder() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna"), ben = try fixture.backend("ben")
        let v1 = try anna.item(fixture.file)
        _ = try anna.modifyContent(of: fixture.file, baseVersion: v1.version, contentsOf: try fixture.contents("v2"))
        _ = try anna.lock(fixture.file, LockBackendTests.request)

        let holder = LockBackendTests.lockHolder { _ = try ben.restore(fixture.file, version: v1.version, baseVersion: nil) }
        #expect(holder?.holder == "anna")
        let restored = try anna.restore(fixture.file, version: v1.version, baseVersion: nil)
        #expect(restored.lock?.heldHere == true)
        #expect(try Self.content(fixture.file, ben) == "v1")
    }
}
