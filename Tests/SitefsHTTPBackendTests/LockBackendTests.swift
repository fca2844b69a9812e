import Foundation
import SitefsAPI
@testable import SitefsHTTPBackend
import SitefsProvider
import SitefsTestSupport
import Synchronization
import Testing

/// `HTTPDocumentBackend`'s locks against a real `sitefs-server`: two backends as two users
/// (and two as one user on two machines) take, see, honour and release each other's locks.
@Suite struct LockBackendTests {
    /// A server with Anna ("Anna Berger") and Ben on the site Harbour, which holds plan.odt.
    final class Fixture: @unchecked Sendable {
        let scratch: URL
        let server: ServerProcess
        let site: ItemIdentifier
        let file: ItemIdentifier

        init() throws {
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-locks-\(UUID().uuidString.prefix(8))")
            let data = scratch.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            for (arguments, stdin) in [(["user", "add", "anna", "--display-name", "Anna Berger"], "secret\n"),
                                       (["user", "add", "ben"], "secret\n"), (["site", "add", "Harbour"], nil),
                                       (["grant", "anna", "Harbour"], nil), (["grant", "ben", "Harbour"], nil)] {
                let result = try run(ServerProcess.executable, arguments + ["--data", data.path], stdin: stdin)
                guard result.status == 0 else { throw ProcessFailure("sitefs-server \(arguments): \(result.err)") }
            }
            server = try ServerProcess(dataDirectory: data)
            let anna = try Self.backend("anna", on: server)
            site = try #require(try anna.sites(after: nil, limit: 10).items.first).identifier
            let source = scratch.appendingPathComponent("v1")
            try Data("v1".utf8).write(to: source)
            file = try anna.createFile(named: "plan.odt", in: site, contentsOf: source.path).identifier
        }

        deinit {
            server.stop()
            try? FileManager.default.removeItem(at: scratch)
        }

        /// A backend signed in as `user` (each call: a new session, as a second machine has).
        func backend(_ user: String) throws -> HTTPDocumentBackend {
            try Self.backend(user, on: server)
        }

        static func backend(_ user: String, on server: ServerProcess) throws -> HTTPDocumentBackend {
            let grant = try HTTPDocumentBackend.signIn(baseURL: server.baseURL, username: user, password: "secret")
            return HTTPDocumentBackend(baseURL: server.baseURL, tokens: FixedToken(grant.token))
        }

        /// A local file holding `text`, to upload.
        func contents(_ text: String) throws -> String {
            let path = scratch.appendingPathComponent(UUID().uuidString).path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    static let request = LockRequest(holderName: "", device: "site-laptop-3", application: "LibreOffice", timeout: .seconds(300))

    /// The holder named by a `.locked` refusal, or a recorded issue.
    static func lockHolder(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> ProviderLock? {
        do {
            try body()
            Issue.record("expected 423 locked", sourceLocation: sourceLocation)
        } catch ProviderError.locked(let lock) {
            return lock
        } catch {
            Issue.record("expected locked, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func twoUsersSeeHonourAndReleaseALock() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna"), ben = try fixture.backend("ben")
        #expect(anna.lockSupport == .supported)

        let taken = try anna.lock(fixture.file, Self.request)
        #expect(taken.heldHere && taken.holder == "anna" && taken.holderName == "Anna Berger")
        #expect(taken.device == "site-laptop-3" && taken.application == "LibreOffice")
        let expires = try #require(taken.expires)
        #expect(expires.microseconds - taken.since.microseconds == 300_000_000)

        // Ben sees Anna's lock, not held by him; Anna sees hers held here, in listings too.
        let seen = try #require(try ben.item(fixture.file).lock)
        #expect(!seen.heldHere && seen.holderName == "Anna Berger" && seen.since == taken.since)
        #expect(try anna.item(fixture.file).lock?.heldHere == true)
        #expect(try anna.children(of: fixture.site, after: nil, limit: 10).items.first?.lock?.heldHere == true)
        #expect(try ben.children(of: fixture.site, after: nil, limit: 10).items.first?.lock?.heldHere == false)

        // Ben's writes are refused naming Anna; hers carry the token and go through.
        let holder = Self.lockHolder { _ = try ben.modifyContent(of: fixture.file, baseVersion: nil, contentsOf: try fixture.contents("ben")) }
        #expect(holder?.holder == "anna" && holder?.holderName == "Anna Berger" && holder?.heldHere == false)
        _ = Self.lockHolder { _ = try ben.update(fixture.file, ItemChanges(name: "bens.odt"), baseVersion: nil) }
        _ = Self.lockHolder { try ben.delete(fixture.file, baseVersion: nil) }
        _ = Self.lockHolder { _ = try ben.lock(fixture.file, Self.request) }
        let saved = try anna.modifyContent(of: fixture.file, baseVersion: nil, contentsOf: try fixture.contents("anna's"))
        #expect(saved.lock?.heldHere == true)
        let renamed = try anna.update(fixture.file, ItemChanges(name: "final.odt"), baseVersion: nil)
        #expect(renamed.name == "final.odt" && renamed.lock?.heldHere == true)

        // A refresh keeps the lock (held here), with a new expiry.
        let refreshed = try anna.lock(fixture.file, LockRequest(holderName: "", device: "site-laptop-3", application: "LibreOffice",
                                                                 timeout: .seconds(900)))
        #expect(refreshed.heldHere && refreshed.since == taken.since)

        try anna.unlock(fixture.file)
        #expect(try ben.item(fixture.file).lock == nil)
        let bens = try ben.modifyContent(of: fixture.file, baseVersion: nil, contentsOf: try fixture.contents("ben"))
        #expect(bens.lock == nil && bens.modifiedBy == "ben")
        // Holding nothing, unlock sends nothing and is no error.
        try anna.unlock(fixture.file)
    }

    /// One person on two machines: the other machine's lock is someone else's there.
    @Test func theSameUserOnAnotherMachineIsRefused() throws {
        let fixture = try Fixture()
        let laptop = try fixture.backend("anna"), desktop = try fixture.backend("anna")
        _ = try laptop.lock(fixture.file, Self.request)
        #expect(try desktop.item(fixture.file).lock?.heldHere == false)
        let holder = Self.lockHolder { _ = try desktop.modifyContent(of: fixture.file, baseVersion: nil, contentsOf: try fixture.contents("x")) }
        #expect(holder?.device == "site-laptop-3")
        _ = Self.lockHolder { _ = try desktop.lock(fixture.file, Self.request) }
        // Its unlock holds nothing, so it ends nothing.
        try desktop.unlock(fixture.file)
        #expect(try laptop.item(fixture.file).lock?.heldHere == true)
    }

    /// A rename-over onto the file this backend locked carries its token (the destination's
    /// id is not known to the call), as an editor's "save to a temporary file, rename it
    /// over the original" needs.
    @Test func aRenameOverOntoTheLockedFileCarriesItsToken() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna")
        _ = try anna.lock(fixture.file, Self.request)
        let temporary = try anna.createFile(named: "plan.odt~tmp", in: fixture.site, contentsOf: try fixture.contents("saved"))
        let survivor = try anna.update(temporary.identifier, ItemChanges(name: "plan.odt", replaceExisting: true), baseVersion: nil)
        #expect(survivor.identifier == fixture.file && survivor.lock?.heldHere == true)
    }

    /// A write whose tokens were chosen before this backend took the file's lock, and that
    /// reaches the server after the lock did (a file opened for writing is locked in the
    /// background while `touch` sets its time, or a quick save goes), is sent once more with
    /// the token: the mount's own lock does not refuse it. Someone else's lock still does
    /// (the lock tried meanwhile was refused too, so nothing goes again).
    @Test func aWriteOvertakenByThisBackendsOwnLockGoesAgainWithTheToken() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna")
        // The first time a write of the file has its tokens (none), the lock is taken.
        let sends = Mutex(0)
        anna.writePause.withLock {
            $0 = { [file = fixture.file] item in
                guard item == file, sends.withLock({ $0 += 1; return $0 }) == 1 else { return }
                _ = try? anna.lock(file, Self.request)
            }
        }
        let time = Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000)
        let touched = try anna.update(fixture.file, ItemChanges(modified: time), baseVersion: nil)
        #expect(touched.modified == time && touched.lock?.heldHere == true)
        #expect(sends.withLock { $0 } == 2)
        #expect(try anna.item(fixture.file).modified == time)

        sends.withLock { $0 = 0 }
        try anna.unlock(fixture.file)
        let saved = try anna.modifyContent(of: fixture.file, baseVersion: nil, contentsOf: try fixture.contents("v2"))
        #expect(saved.size == 2 && saved.lock?.heldHere == true)
        #expect(sends.withLock { $0 } == 2)

        // Ben's lock: the write that took Anna's (refused by Ben's) is refused again.
        anna.writePause.withLock { $0 = nil }
        try anna.unlock(fixture.file)
        let ben = try fixture.backend("ben")
        _ = try ben.lock(fixture.file, Self.request)
        sends.withLock { $0 = 0 }
        anna.writePause.withLock {
            $0 = { [file = fixture.file] item in
                guard item == file, sends.withLock({ $0 += 1; return $0 }) == 1 else { return }
                _ = try? anna.lock(file, Self.request)
            }
        }
        let holder = Self.lockHolder { _ = try anna.update(fixture.file, ItemChanges(modified: time), baseVersion: nil) }
        #expect(holder?.holder == "ben")
        #expect(sends.withLock { $0 } == 1)  // Anna's lock was refused too: no token to send again
    }

    /// Timeouts go out in whole seconds within what the server grants.
    @Test func timeoutsAreClampedToWhatTheServerGrants() throws {
        let fixture = try Fixture()
        let anna = try fixture.backend("anna")
        for (asked, granted) in [(Duration.seconds(2 * 3600), Int64(3600)), (.milliseconds(1), 1), (.milliseconds(1500), 2)] {
            let lock = try anna.lock(fixture.file, LockRequest(holderName: "", device: String(repeating: "é", count: 150),
                                                                application: "a\u{7}b", timeout: asked))
            #expect(try #require(lock.expires).microseconds - lock.since.microseconds == granted * 1_000_000)
            #expect(lock.device.utf8.count == 200 && lock.application == "ab")
            try anna.unlock(fixture.file)
        }
    }
}
