import Foundation
import SitefsAPI
import SitefsDemoContent
import SitefsTestSupport
import Testing

/// Two people, one document, on two real mounts of one server: LibreOffice on A opens it
/// and holds the server's lock; B's mount shows A's lock file, so B's LibreOffice opens the
/// document read-only; a save from B meanwhile is kept as a conflict copy; once A closes,
/// B edits. Run on `sitefs-server` (B long-polls its change feed) and on Apache mod_dav
/// (LOCK/UNLOCK; B revalidates listings after a second).
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct EditingLockMountTests {
    static let password = ScenarioMount.password

    /// One server with "Riverside/report.odt", and two mounts of it on "two desks": each its
    /// own cache, device name and display name. The same account on both (a person on two
    /// machines is as much "someone else" for editing as another person).
    final class TwoDesks: @unchecked Sendable {
        let server: any ScenarioServer
        let a: DaemonMount
        let b: DaemonMount

        init(_ backend: ScenarioBackend, lockTimeout: Int = 300) throws {
            a = try DaemonMount(prefix: "desk-a")
            b = try DaemonMount(prefix: "desk-b")
            do {
                let server = try backend.start(in: a.root)
                self.server = server
                a.onTearDown { server.stop() }
                try server.write("Riverside/report.odt", Data(OfficeDocuments.odt(title: "Site report", paragraphs: ["Concrete poured."])))
                let common = ["--poll-interval", "0.3", "--cache-ttl", "1", "--log-level", "debug", "--change-wait", "25",
                              "--lock-timeout", String(lockTimeout)]
                try a.login(server.url, user: "anna", password: EditingLockMountTests.password)
                try a.mount(common + ["--device-name", "desk-a", "--display-name", "Anna at desk A"])
                try b.login(server.url, user: "anna", password: EditingLockMountTests.password)
                try b.mount(common + ["--device-name", "desk-b", "--display-name", "Anna at desk B"])
            } catch {
                b.tearDown()
                a.tearDown()
                throw error
            }
        }

        func tearDown() {
            b.tearDown()
            a.tearDown()  // stops the server after A's unmount
        }
    }

    static let lockFile = "Riverside/.~lock.report.odt#"

    private static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    private static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// The text of an ODF document's body (its content.xml).
    private static func documentText(_ data: Data?, in folder: URL) throws -> String {
        guard let data else { return "" }
        let file = folder.appendingPathComponent("check-\(UUID().uuidString.prefix(6)).odt")
        try data.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try run(URL(fileURLWithPath: "/usr/bin/python3"),
                       ["-c", "import zipfile,sys; print(zipfile.ZipFile(sys.argv[1]).read('content.xml').decode())", file.path]).out
    }

    @Test(arguments: [ScenarioBackend.sitefs, .apache])
    func libreOfficeOnTheOtherMountOpensALockedDocumentReadOnlyAndForEditingOnceFree(_ backend: ScenarioBackend) throws {
        try #require(OfficeSession.available, "LibreOffice with python3-uno is needed (scripts/test installs it)")
        let desks = try TwoDesks(backend)
        defer { desks.tearDown() }
        let (a, b) = (desks.a, desks.b)
        #expect(try String(decoding: Data(contentsOf: URL(fileURLWithPath: b.path("Riverside/report.odt"))).prefix(2), as: UTF8.self) == "PK")

        let officeA = try OfficeSession(profile: a.root.appendingPathComponent("office-profile"))
        defer { officeA.quit() }
        #expect(try officeA.open(a.path("Riverside/report.odt")) == false, "A opens it for editing")
        #expect(Self.exists(a.path(Self.lockFile)), "LibreOffice's own lock file on A")

        // B's mount shows A's lock as LibreOffice's lock file, naming A.
        #expect(eventually(timeout: .seconds(20)) { Self.exists(b.path(Self.lockFile)) }, "B shows A's lock\n\(b.daemonLog.suffix(3000))")
        let record = Self.text(b.path(Self.lockFile)) ?? ""
        #expect(record.hasPrefix("Anna at desk A,") || record.hasPrefix("anna,"), "\(record)")
        #expect(record.contains(",desk-a,"), "\(record)")
        let attribute = try run(URL(fileURLWithPath: "/usr/bin/getfattr"), ["--only-values", "-n", "user.sitefs.lock", b.path("Riverside/report.odt")])
        #expect(attribute.out.contains("on desk-a since "), "\(attribute.out) \(attribute.err)")
        let status = try b.sitefs(["status", b.mountpoint.path])
        #expect(status.out.contains("Riverside/report.odt"), "\(status.out)")

        // B's LibreOffice opens it read-only (the "Document in use" rule).
        let officeB = try OfficeSession(profile: b.root.appendingPathComponent("office-profile"))
        defer { officeB.quit() }
        #expect(try officeB.open(b.path("Riverside/report.odt")) == true, "B opens A's locked document read-only")
        try officeB.close()

        // A save from B while A holds it: kept as a conflict copy; the document is A's.
        let mine = OfficeDocuments.odt(title: "Site report", paragraphs: ["B's numbers."])
        try Data(mine).write(to: URL(fileURLWithPath: b.path("Riverside/report.odt")))
        try b.sync(timeout: 60)
        let names = try desks.server.names(in: "Riverside")
        let copies = names.filter { $0.hasPrefix("report (conflict ") && $0.hasSuffix(".odt") }
        try #require(copies.count == 1, "\(names)")
        #expect(try desks.server.read("Riverside/\(copies[0])") == Data(mine), "B's edit is kept whole")

        // A edits, stores (its lock's token goes with the save) and closes.
        try officeA.edit(appending: " Edited at desk A.")
        try officeA.close()
        #expect(eventually(timeout: .seconds(20)) { !Self.exists(a.path(Self.lockFile)) })
        try a.sync(timeout: 60)
        #expect(try Self.documentText(desks.server.read("Riverside/report.odt"), in: a.root).contains("Edited at desk A."))
        #expect(!(try desks.server.names(in: "Riverside")).contains { $0.hasPrefix(".~lock") }, "no lock file went to the server")

        // Free: B's lock file goes, and B's LibreOffice opens it for editing.
        #expect(eventually(timeout: .seconds(20)) { !Self.exists(b.path(Self.lockFile)) }, "\(b.daemonLog.suffix(3000))")
        #expect(try officeB.open(b.path("Riverside/report.odt")) == false, "B edits once A has closed it")
        #expect(eventually(timeout: .seconds(20)) { Self.exists(a.path(Self.lockFile)) }, "now A sees B's lock")
        try officeB.close()
    }

    @Test(arguments: [ScenarioBackend.sitefs, .apache])
    func aLockOfAMountThatWasKilledEndsAtItsTimeout(_ backend: ScenarioBackend) throws {
        let desks = try TwoDesks(backend, lockTimeout: 5)
        defer { desks.tearDown() }
        let (a, b) = (desks.a, desks.b)
        // LibreOffice's lock file made on A (any program may make it): A takes the lock.
        #expect(try a.shell("printf ',anna,desk-a,28.11.2026 10:00,file:///p;' > '\(Self.lockFile)'").status == 0)
        #expect(eventually(timeout: .seconds(20)) { Self.exists(b.path(Self.lockFile)) }, "\(b.daemonLog.suffix(3000))")
        #expect(a.killDaemon(), "A's daemon killed")

        // Nobody releases it: the server ends it at its timeout, and B's mount shows it gone.
        #expect(eventually(timeout: .seconds(40)) { !Self.exists(b.path(Self.lockFile)) }, "\(b.daemonLog.suffix(3000))")
        let mine = OfficeDocuments.odt(title: "Site report", paragraphs: ["B's numbers."])
        try Data(mine).write(to: URL(fileURLWithPath: b.path("Riverside/report.odt")))
        try b.sync(timeout: 60)
        #expect(try desks.server.read("Riverside/report.odt") == Data(mine), "B's save is the document's new version")
        #expect(!(try desks.server.names(in: "Riverside")).contains { $0.contains("(conflict ") })
    }

    /// Any program's open for writing locks the file on the server until it closes: another
    /// client's save meanwhile is refused (423, naming this mount), and goes through after.
    @Test func aFileOpenForWritingHereIsLockedForOthersUntilItIsClosed() throws {
        let fixture = try MountFixture(extraMountArguments: ["--device-name", "desk-a"])
        defer { fixture.tearDown() }
        try "original".write(toFile: fixture.path("Riverside/plan.txt"), atomically: false, encoding: .utf8)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let item = try #require(try fixture.serverItem("Riverside/plan.txt"))
        try editWhileOpen(fixture.path("Riverside/plan.txt"), to: "mine") {
            #expect(try eventually(timeout: .seconds(15)) { try fixture.serverItem("Riverside/plan.txt")?.lock != nil })
            let refused = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", "theirs"])
            #expect(refused.status == 423, "\(refused)")
            #expect(refused.body.contains("desk-a") || refused.body.contains("anna"), "\(refused.body)")
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.serverContent("Riverside/plan.txt") == "mine")
        #expect(try eventually(timeout: .seconds(15)) { try fixture.serverItem("Riverside/plan.txt")?.lock == nil })
        let after = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", "theirs"])
        #expect(after.status == 200, "\(after)")
        let site = try #require(try fixture.serverItem("Riverside"))
        #expect(try fixture.children(site.id).map(\.name) == ["plan.txt"], "no conflict copy")
    }
}
