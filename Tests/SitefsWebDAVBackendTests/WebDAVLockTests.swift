import Foundation
import Logging
import SitefsAPI
import SitefsHTTP
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAV
@testable import SitefsWebDAVBackend
import Synchronization
import Testing

/// Locks for editing against real servers that lock: Apache (DavLockDB), WsgiDAV and nginx
/// (dav-ext with a lock zone). Two backends, each with its own identity table, play two
/// mounts of the same account (Anna's laptop and her desktop): what one locks, the other sees
/// and cannot change; the holder can.
@Suite struct WebDAVLockTests {
    typealias Server = LockingDAVServer


    private struct World {
        let kind: Server
        let server: any WebDAVTestServer
        let scratch: URL
        /// Anna's laptop, and her desktop.
        let laptop: WebDAVDocumentBackend
        let desktop: WebDAVDocumentBackend
        let authorization: String?

        func local(_ text: String) throws -> String {
            let file = scratch.appendingPathComponent("upload-\(UUID().uuidString)")
            try Data(text.utf8).write(to: file)
            return file.path
        }

        func text(_ path: String) throws -> String {
            String(decoding: try server.read(path), as: UTF8.self)
        }

        /// The item at a path of names below the mount URL, as `backend` lists it.
        func item(_ path: String, _ backend: WebDAVDocumentBackend) throws -> ProviderItem {
            var folder: ProviderItem?
            var found: ProviderItem?
            for name in path.split(separator: "/").map(String.init) {
                let page = try folder.map { try backend.children(of: $0.identifier, after: nil, limit: 1000) }
                    ?? backend.sites(after: nil, limit: 1000)
                let next = try #require(page.items.first { $0.name == name }, "\(name) is not listed")
                found = next
                folder = next
            }
            return try #require(found)
        }

        /// curl against the server, as another WebDAV client (with the same sign-in).
        func curl(_ arguments: [String]) throws -> String {
            let user = authorization == nil ? [] : ["-u", "\(LockingDAVServer.credentials.user):\(LockingDAVServer.credentials.password)"]
            let outcome = try run(URL(fileURLWithPath: "/usr/bin/curl"), ["-q", "-s", "--noproxy", "*", "--max-time", "20"] + user + arguments)
            guard outcome.status == 0 else { throw ProcessFailure("curl \(arguments): \(outcome.status) \(outcome.err)") }
            return outcome.out
        }

        /// The tokens the server lists on the file at `path`.
        func tokens(_ path: String) throws -> [String] {
            let listing = WebDAVListing(client: HTTPClient(baseURL: server.origin), basePath: server.collectionPath, origin: server.origin)
            let headers = authorization.map { [("Authorization", $0)] } ?? []
            let entry = try listing.resource(at: path.split(separator: "/").map(String.init), collection: false, headers: headers)
            return try #require(entry).properties.locks.compactMap(\.token)
        }
    }

    private func withServer(_ kind: Server, nginxLocks: Bool = true, _ body: (World) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-davlock-\(UUID().uuidString)")
        let root = directory.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Harbour Tower/Plans"), withIntermediateDirectories: true)
        try Data("level 1\n".utf8).write(to: root.appendingPathComponent("Harbour Tower/Plans/level1.txt"))
        try Data("level 2\n".utf8).write(to: root.appendingPathComponent("Harbour Tower/Plans/level2.txt"))
        defer { try? FileManager.default.removeItem(at: directory) }
        let (server, authorization) = try kind.start(root: root, nginxLocks: nginxLocks)
        defer { server.stop() }
        let make = { () throws -> WebDAVDocumentBackend in try Server.backend(server.collectionURL, authorization: authorization) }
        try body(World(kind: kind, server: server, scratch: directory, laptop: try make(), desktop: try make(), authorization: authorization))
    }

    private static let laptopLock = LockRequest(holderName: "Anna Berger", device: "anna-laptop", application: "LibreOffice",
                                                timeout: .seconds(120))

    private static func isLocked(_ error: any Error, by holderName: String?) -> Bool {
        guard case .locked(let lock) = error as? ProviderError else { return false }
        return holderName.map { lock?.holderName == $0 && lock?.heldHere == false } ?? true
    }

    @Test(arguments: Server.allCases)
    func aLockIsSeenByTheOtherMountWhichCannotChangeTheFile(_ kind: Server) throws {
        try withServer(kind) { world in
            #expect(world.laptop.lockSupport == .supported)
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            let before = Timestamp.now()
            let taken = try world.laptop.lock(file.identifier, Self.laptopLock)
            #expect(taken.heldHere && taken.holderName == "Anna Berger" && taken.device == "anna-laptop" && taken.application == "LibreOffice")
            #expect(taken.holder == (kind == .apache ? "anna" : "Anna Berger"))  // the sign-in's user, where there is one
            // nginx grants its zone's timeout (a minute here), the others what was asked.
            let granted: Int64 = kind == .nginx ? 60 : 120
            let expires = try #require(taken.expires)
            #expect(expires.microseconds >= before.microseconds + (granted - 2) * 1_000_000
                    && expires.microseconds <= Timestamp.now().microseconds + granted * 1_000_000)

            // The desktop sees it, in its folder's listing and in the file's item.
            let other = try world.item("Harbour Tower/Plans/level1.txt", world.desktop)
            let seen = try #require(other.lock)
            let read = try #require(try world.desktop.item(other.identifier).lock)
            #expect(!seen.heldHere && !read.heldHere)
            #expect([seen.holder, seen.holderName, seen.device, seen.application] == [read.holder, read.holderName, read.device, read.application])
            #expect(seen.since == read.since && seen.expires != nil && read.expires != nil)
            if kind.keepsOwner {
                #expect(seen.holderName == "Anna Berger" && seen.device == "anna-laptop" && seen.application == "LibreOffice")
                #expect(seen.holder == taken.holder && seen.since == taken.since)
            } else {
                #expect(seen.holder.isEmpty && seen.device.isEmpty && seen.application.isEmpty)
            }
            #expect(try world.item("Harbour Tower/Plans/level2.txt", world.desktop).lock == nil)
            #expect(try world.laptop.item(file.identifier).lock?.heldHere == true)

            // The desktop can neither save, delete, rename nor replace it.
            let holder = kind.keepsOwner ? "Anna Berger" : nil
            #expect { _ = try world.desktop.modifyContent(of: other.identifier, baseVersion: other.version, contentsOf: try world.local("desktop\n"))
            } throws: { Self.isLocked($0, by: holder) }
            #expect { try world.desktop.delete(other.identifier, baseVersion: nil) } throws: { Self.isLocked($0, by: holder) }
            #expect { _ = try world.desktop.update(other.identifier, ItemChanges(name: "renamed.txt"), baseVersion: nil)
            } throws: { Self.isLocked($0, by: holder) }
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "level 1\n" && !world.server.exists("Harbour Tower/Plans/renamed.txt"))
            let replacement = try world.desktop.createFile(named: ".level1.tmp", in: try #require(other.parent), contentsOf: try world.local("over\n"))
            let replace = { try world.desktop.update(replacement.identifier, ItemChanges(name: "level1.txt", replaceExisting: true), baseVersion: nil) }
            if kind == .nginx {
                // dav-ext looks the destination's lock up by its URL undecoded, and its locks
                // by decoded path: with a percent-escape on the way ("Harbour%20Tower"), it
                // does not see the lock and lets the file be replaced (README, "Locks").
                _ = try replace()
                #expect(try world.text("Harbour Tower/Plans/level1.txt") == "over\n")
            } else {
                #expect { _ = try replace() } throws: { Self.isLocked($0, by: holder) }
                #expect(try world.text("Harbour Tower/Plans/level1.txt") == "level 1\n")
            }

            // The laptop saves through its lock, and refreshes it: a later end.
            let current = try world.laptop.item(file.identifier)
            let saved = try world.laptop.modifyContent(of: file.identifier, baseVersion: current.version, contentsOf: try world.local("laptop\n"))
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "laptop\n" && saved.lock?.heldHere == true)
            var longer = Self.laptopLock
            longer.timeout = .seconds(600)
            let refreshed = try world.laptop.lock(file.identifier, longer)
            #expect(refreshed.heldHere && refreshed.since == taken.since)
            let later = try #require(refreshed.expires)
            #expect(kind == .nginx ? later > expires : later.microseconds > expires.microseconds + 400_000_000)
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").count == 1)

            // Released, the file is the desktop's to change.
            try world.laptop.unlock(file.identifier)
            try world.laptop.unlock(file.identifier)  // nothing held: nothing to do
            let free = try world.desktop.item(other.identifier)
            #expect(free.lock == nil)
            _ = try world.desktop.modifyContent(of: other.identifier, baseVersion: free.version, contentsOf: try world.local("desktop\n"))
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "desktop\n")
        }
    }

    @Test(arguments: Server.allCases)
    func theHolderRenamesReplacesAndDeletesItsLockedFiles(_ kind: Server) throws {
        try withServer(kind) { world in
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            let plans = try #require(file.parent)
            _ = try world.laptop.lock(file.identifier, Self.laptopLock)
            // An editor's save by rename over the file it locked: the document keeps its identity.
            let temporary = try world.laptop.createFile(named: ".level1.tmp", in: plans, contentsOf: try world.local("saved by rename\n"))
            let replaced = try world.laptop.update(temporary.identifier, ItemChanges(name: "level1.txt", replaceExisting: true), baseVersion: nil)
            #expect(replaced.identifier == file.identifier)
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "saved by rename\n")
            // Whether the server kept the lock on the name (Apache, nginx) or ended it with the
            // file it replaced (WsgiDAV), the holder goes on saving and locking.
            _ = try world.laptop.modifyContent(of: file.identifier, baseVersion: nil, contentsOf: try world.local("saved again\n"))
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "saved again\n")
            #expect(try world.laptop.lock(file.identifier, Self.laptopLock).heldHere)
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").count == 1)

            // A rename of a locked file: the lock stays behind with the name (RFC 4918 §7.7).
            let second = try world.item("Harbour Tower/Plans/level2.txt", world.laptop)
            _ = try world.laptop.lock(second.identifier, Self.laptopLock)
            let renamed = try world.laptop.update(second.identifier, ItemChanges(name: "level 2 (final).txt"), baseVersion: nil)
            #expect(renamed.name == "level 2 (final).txt" && renamed.lock == nil)
            #expect(try world.text("Harbour Tower/Plans/level 2 (final).txt") == "level 2\n")
            let moved = try world.item("Harbour Tower/Plans/level 2 (final).txt", world.desktop)
            _ = try world.desktop.modifyContent(of: moved.identifier, baseVersion: moved.version, contentsOf: try world.local("desktop\n"))

            // Deleting a locked file ends its lock with it.
            try world.laptop.delete(file.identifier, baseVersion: nil)
            #expect(!world.server.exists("Harbour Tower/Plans/level1.txt"))
            try world.laptop.unlock(file.identifier)  // nothing held any more
        }
    }

    /// A save whose `If` header was chosen before this mount took the file's lock, and that
    /// reaches the server after the lock did (a file opened for writing is locked in the
    /// background while a quick save goes), is sent once more with the token: the mount's
    /// own lock does not refuse it.
    @Test(arguments: Server.allCases)
    func aSaveOvertakenByTheMountsOwnLockGoesAgainWithTheToken(_ kind: Server) throws {
        try withServer(kind) { world in
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            let sends = Mutex(0)
            world.laptop.writePause.withLock {
                $0 = { [laptop = world.laptop] in
                    guard sends.withLock({ $0 += 1; return $0 }) == 1 else { return }
                    _ = try? laptop.lock(file.identifier, Self.laptopLock)
                }
            }
            _ = try world.laptop.modifyContent(of: file.identifier, baseVersion: nil, contentsOf: try world.local("saved\n"))
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "saved\n")
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").count == 1)
        }
    }

    @Test(arguments: Server.allCases)
    func aLockEndedOnTheServerNoLongerStopsItsFormerHolder(_ kind: Server) throws {
        try withServer(kind) { world in
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            _ = try world.laptop.lock(file.identifier, Self.laptopLock)
            // Someone (an administrator, another client with the token) ends it on the server.
            let token = try #require(try world.tokens("Harbour Tower/Plans/level1.txt").first)
            _ = try world.curl(["-X", "UNLOCK", "-H", "Lock-Token: <\(token)>", world.server.collectionURL + "Harbour%20Tower/Plans/level1.txt"])
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").isEmpty)
            // The stale token does not fail the save; the next lock is a new one.
            _ = try world.laptop.modifyContent(of: file.identifier, baseVersion: nil, contentsOf: try world.local("laptop\n"))
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "laptop\n")
            let again = try world.laptop.lock(file.identifier, Self.laptopLock)
            #expect(again.heldHere)
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").allSatisfy { $0 != token })
            try world.laptop.unlock(file.identifier)
            #expect(try world.tokens("Harbour Tower/Plans/level1.txt").isEmpty)
        }
    }

    @Test(arguments: Server.allCases)
    func aLockByAnotherClientShowsTheOwnerItGave(_ kind: Server) throws {
        try withServer(kind) { world in
            let body = """
                <?xml version="1.0" encoding="utf-8"?>
                <D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype>\
                <D:owner><D:href>mailto:ben@example.com</D:href></D:owner></D:lockinfo>
                """
            _ = try world.curl(["-X", "LOCK", "-H", "Depth: 0", "-H", "Timeout: Second-300", "-H", "Content-Type: application/xml",
                                "--data-binary", body, world.server.collectionURL + "Harbour%20Tower/Plans/level2.txt"])
            let lock = try #require(try world.item("Harbour Tower/Plans/level2.txt", world.desktop).lock)
            #expect(!lock.heldHere && lock.device.isEmpty && lock.application.isEmpty && lock.expires != nil)
            #expect(lock.holder == (kind.keepsOwner ? "mailto:ben@example.com" : ""))
            #expect(lock.holderName == lock.holder)
            // Not said by the client: the time this backend first saw it, the same each time.
            #expect(try world.item("Harbour Tower/Plans/level2.txt", world.desktop).lock?.since == lock.since)
            let file = try world.item("Harbour Tower/Plans/level2.txt", world.laptop)
            #expect { _ = try world.laptop.lock(file.identifier, Self.laptopLock) } throws: { error in
                guard case .locked(let holder) = error as? ProviderError else { return false }
                return holder?.holder == lock.holder && holder?.heldHere == false
            }
        }
    }

    @Test(arguments: Server.allCases)
    func lockingAFileGoneFromTheServerLeavesNothingThere(_ kind: Server) throws {
        try withServer(kind) { world in
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            try world.server.remove("Harbour Tower/Plans/level1.txt")
            #expect { _ = try world.laptop.lock(file.identifier, Self.laptopLock) } throws: { ($0 as? ProviderError)?.isNotFound == true }
            #expect(!world.server.exists("Harbour Tower/Plans/level1.txt"))
        }
    }

    @Test func nginxWithoutALockZoneSaysItDoesNotLockAndWorksAsBefore() throws {
        try withServer(.nginx, nginxLocks: false) { world in
            guard case .unsupported(let reason) = world.laptop.lockSupport else {
                Issue.record("nginx without a lock zone said it locks")
                return
            }
            #expect(reason.contains("DAV") && reason.contains("\"1\""))
            let file = try world.item("Harbour Tower/Plans/level1.txt", world.laptop)
            #expect(file.lock == nil)
            #expect { _ = try world.laptop.lock(file.identifier, Self.laptopLock) } throws: { error in
                if case .refused(405, "locks_unsupported", _) = error as? ProviderError { return true }
                return false
            }
            let saved = try world.laptop.modifyContent(of: file.identifier, baseVersion: file.version, contentsOf: try world.local("saved\n"))
            #expect(saved.lock == nil)
            #expect(try world.text("Harbour Tower/Plans/level1.txt") == "saved\n")
            try world.laptop.unlock(file.identifier)  // nothing held: nothing sent, no error
        }
    }
}
