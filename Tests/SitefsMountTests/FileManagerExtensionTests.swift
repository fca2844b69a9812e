import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// Issue 32: the file manager shows each item's state and offers the File Provider actions.
/// The extension (scripts/packaging/desktop) runs in a real Files window under Xvfb, where
/// its record shows the emblems it set and how they follow a save and a pin; and through
/// the real Nautilus GObject types outside Files (Support/extension_driver.py) for the
/// context menu, whose actions run `sitefs` for real.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct FileManagerExtensionTests {
    static let desktopFiles = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/packaging/desktop")
    static let driver = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/extension_driver.py")

    @Test func emblemsInFilesFollowASaveAndAPin() throws {
        let fixture = try MountFixture(throughFaultProxy: true)
        defer { fixture.tearDown() }
        try #require(try fixture.shell("mkdir Riverside/Forms && printf 'form a' > Riverside/Forms/a.odt && printf 'form b' > Riverside/Forms/b.odt").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(try fixture.sitefs(["pin", fixture.path("Riverside/Forms/b.odt")]).status == 0)
        #expect(try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path]).status == 0)

        let desktop = try DesktopSession(in: fixture.root)
        defer { desktop.stop() }
        try install(into: desktop)
        let record = fixture.root.appendingPathComponent("extension.jsonl")
        try desktop.openInFiles(fixture.path("Riverside/Forms"), extraEnvironment: extensionEnvironment(record),
                                log: fixture.root.appendingPathComponent("nautilus.log"))
        let a = fixture.path("Riverside/Forms/a.odt"), b = fixture.path("Riverside/Forms/b.odt")
        let nautilusLog = { String(decoding: (try? Data(contentsOf: fixture.root.appendingPathComponent("nautilus.log"))) ?? Data(), as: UTF8.self).suffix(3_000) }
        // The first emblem waits for Files itself to start under Xvfb and list the folder:
        // over 30 s on a loaded 2-core CI machine, where everything after it is quick.
        #expect(waitForEmblem(record, a, "online-only", "emblem-sitefs-online-only", timeout: .seconds(120)),
                "no online-only emblem: \(events(record)) \(nautilusLog())")
        #expect(waitForEmblem(record, b, "downloaded", "emblem-sitefs-kept"), "no kept emblem: \(events(record))")
        #expect(eventually(timeout: .seconds(30)) { events(record).contains { $0["event"] as? String == "listening" } })

        // A save: waiting or uploading, then on the server again, told by the daemon. The
        // server's answer to the upload takes a moment, so the file manager can be seen to
        // show it on its way.
        let document = try #require(try fixture.serverItem("Riverside/Forms/a.odt"))
        try #require(fixture.proxy).delayResponses(toTargetsStartingWith: "/v1/items/\(document.id)/content", by: .seconds(2))
        try #require(try fixture.shell("printf 'form a, filled in' > Riverside/Forms/a.odt").status == 0)
        #expect(waitForEmblem(record, a, "pending", "emblem-sitefs-uploading") || waitForEmblem(record, a, "uploading", "emblem-sitefs-uploading"),
                "the save was not shown: \(events(record))")
        // The save goes at once: its end may be told before the line above looked, so it is
        // looked for after the first emblem of the save, not after what was seen by then.
        let saved = (events(record).firstIndex {
            $0["event"] as? String == "emblem" && $0["path"] as? String == a && ["pending", "uploading"].contains($0["state"] as? String ?? "")
        } ?? events(record).count) + 1
        #expect(waitForEmblem(record, a, "online-only", "emblem-sitefs-online-only", after: saved), "the upload's end was not shown: \(events(record))")
        try #require(fixture.proxy).delayResponses(toTargetsStartingWith: "/v1/items/\(document.id)/content", by: nil)
        #expect(try fixture.serverContent("Riverside/Forms/a.odt") == "form a, filled in")

        // A pin: kept on this device once downloaded.
        let pinned = events(record).count
        #expect(try fixture.sitefs(["pin", a]).status == 0)
        #expect(waitForEmblem(record, a, "downloaded", "emblem-sitefs-kept", after: pinned), "the pin was not shown: \(events(record))")
        // Told, not polled: every update after the first listing came from a change the daemon sent.
        let changes = events(record).filter { $0["event"] as? String == "change" && $0["path"] as? String == a }
        #expect(!changes.isEmpty)
        try? desktop.screenshot(to: DesktopSession.artifacts.appendingPathComponent("files-emblems.png"))
    }

    /// The same code base in Files and in Nemo: each loads its own wrapper over the shared
    /// module, with its own GObject types.
    @Test(arguments: ["nautilus", "nemo"])
    func theContextMenuPinsFreesUpSpaceAndNotifiesFailures(fileManager: String) throws {
        let fixture = try MountFixture(mounting: false)
        defer { fixture.tearDown() }
        let desktop = try DesktopSession(in: fixture.root)
        defer { desktop.stop() }
        try desktop.mount(fixture, extraArguments: ["--no-lock-writers"])  // another client edits a file open here
        try #require(try fixture.shell("mkdir Riverside/Plans && printf 'plan one' > Riverside/Plans/one.pdf && printf 'plan two' > Riverside/Plans/two.pdf").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let folder = fixture.path("Riverside/Plans"), one = fixture.path("Riverside/Plans/one.pdf")
        let environment = fixture.environment.merging(desktop.environment) { $1 }.merging(extensionEnvironment(nil)) { $1 }
        let driver = { (arguments: [String], environment: [String: String]) throws -> String in
            try self.driver([fileManager] + arguments, environment)
        }

        #expect(try driver(["menu", folder], environment) == #"["Keep on This Device", "Free Up Space", "Sync Now", "Search in This Site\u2026"]"#)
        #expect(try driver(["menu", fixture.root.path], environment) == "[]", "nothing outside sitefs")
        let pinned = try driver(["activate", "SitefsPin", folder], environment)
        #expect(pinned.contains(#""status": 0"#), "\(pinned)")
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.pinned Riverside/Plans").out == "1")
        #expect(try fixture.sitefs(["sync", "--pinned", fixture.mountpoint.path]).status == 0)
        #expect(try driver(["emblems", one, folder], environment).contains(#""emblem-sitefs-kept""#))
        #expect(try driver(["menu", folder], environment) == #"["Stop Keeping on This Device", "Free Up Space", "Sync Now", "Search in This Site\u2026"]"#)
        #expect(try driver(["menu", one], environment) == #"["Free Up Space", "Sync Now"]"#, "a file its pinned folder keeps")

        // Free up space on a file the pinned folder keeps: refused, and the desktop told why.
        let refused = try driver(["activate", "SitefsEvict", one], environment)
        #expect(refused.contains(#""status": 1"#), "\(refused)")
        let notice = desktop.bus.waitForNotification { ($0["summary"] as? String) == "sitefs: free up space failed" }
        #expect((notice?["body"] as? String)?.contains("kept on this device by the pinned folder Riverside/Plans") == true,
                "\(desktop.bus.recorded)")
        // On the folder: unpinned, copies gone, online-only again.
        let freed = try driver(["activate", "SitefsEvict", folder], environment)
        #expect(freed.contains(#""status": 0"#), "\(freed)")
        #expect(try fixture.shell("getfattr --only-values -n user.sitefs.state Riverside/Plans/one.pdf").out == "online-only")
        #expect(try driver(["emblems", one], environment).contains(#""emblem-sitefs-online-only""#))

        // A conflict copy offers the server's version.
        let item = try #require(try fixture.serverItem("Riverside/Plans/two.pdf"))
        try editWhileOpen(fixture.path("Riverside/Plans/two.pdf"), to: "mine") {
            _ = try fixture.api.call("PUT", "/v1/items/\(item.id)/content", extra: ["--data-binary", "theirs"])
        }
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let copy = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasPrefix("two (conflict ") })
        let menu = try driver(["menu", fixture.path("Riverside/Plans/\(copy)")], environment)
        #expect(menu.contains("Show the Server's Version"), "\(menu)")
        #expect(try driver(["emblems", fixture.path("Riverside/Plans/\(copy)")], environment).contains("emblem-sitefs-conflict"))
    }

    /// Search in This Site, on a folder's menu and an open folder's background, for folders
    /// in a site (not the mount root, nothing outside sitefs, no file): it opens the site's
    /// search folder for the words the dialog got (the dialog itself answered by the
    /// driver), and words that cannot be a folder name are a notification saying why.
    @Test(arguments: ["nautilus", "nemo"])
    func searchInThisSiteOpensTheSitesSearchFolder(fileManager: String) throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        try #require(try fixture.shell("mkdir Riverside/Plans && printf 'plan one' > Riverside/Plans/one.pdf").status == 0)
        let environment = fixture.environment.merging(extensionEnvironment(nil)) { $1 }
        let run = { (arguments: [String]) throws -> String in try self.driver([fileManager] + arguments, environment) }
        let site = fixture.path("Riverside"), folder = fixture.path("Riverside/Plans"), file = fixture.path("Riverside/Plans/one.pdf")
        let search = #""Search in This Site\u2026""#

        #expect(try run(["background-menu", folder]) == "[\(search)]")
        #expect(try run(["background-menu", site]) == "[\(search)]")
        #expect(try run(["background-menu", fixture.mountpoint.path]) == "[]", "the mount root is no site")
        #expect(try run(["background-menu", fixture.root.path]) == "[]", "nothing outside sitefs")
        #expect(try run(["menu", folder]).contains(search))
        #expect(try !run(["menu", file]).contains("Search"), "a file has no search")

        let expected = fixture.mountpoint.path + #"/.search/level 1 plan site:"Riverside""#
        #expect(try Self.object(run(["search-path", folder, "level  1 plan"]))["path"] as? String == expected)
        #expect(try Self.object(run(["search", "item", folder, "level 1 plan"]))["opened"] as? String == expected)
        #expect(try Self.object(run(["search", "background", site, "level 1 plan"]))["opened"] as? String == expected)
        let refused = try Self.object(run(["search", "background", folder, "plans/2026"]))
        #expect((refused["notified"] as? String)?.contains("may not contain '/'") == true, "\(refused)")
        #expect(try Self.object(run(["search-path", fixture.mountpoint.path, "plan"]))["error"] != nil)
    }

    private static func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "\(json)")
    }

    // MARK: Helpers

    /// The extension and its emblems, where Files finds them in the session's home.
    private func install(into desktop: DesktopSession) throws {
        let data = desktop.home.appendingPathComponent(".local/share")
        let extensions = data.appendingPathComponent("nautilus-python/extensions")
        let emblems = data.appendingPathComponent("icons/hicolor/scalable/emblems")
        for folder in [extensions, emblems] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        for name in ["sitefs-nautilus.py", "sitefs_desktop.py"] {
            try FileManager.default.copyItem(at: Self.desktopFiles.appendingPathComponent(name), to: extensions.appendingPathComponent(name))
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.desktopFiles.appendingPathComponent("emblems").path) {
            try FileManager.default.copyItem(at: Self.desktopFiles.appendingPathComponent("emblems/\(name)"), to: emblems.appendingPathComponent(name))
        }
    }

    private func extensionEnvironment(_ record: URL?) -> [String: String] {
        var environment = ["SITEFS_COMMAND": BuiltProducts.executable("sitefs").path]
        if let record { environment["SITEFS_DESKTOP_RECORD"] = record.path }
        return environment
    }

    /// Runs the driver with the system's Python (where python3-nautilus is); its output.
    private func driver(_ arguments: [String], _ environment: [String: String]) throws -> String {
        let result = try run(URL(fileURLWithPath: "/usr/bin/python3"), [Self.driver.path, Self.desktopFiles.path] + arguments,
                             timeout: 90, environment: environment)
        guard result.status == 0 || arguments.dropFirst().first == "activate" else { throw ProcessFailure("driver \(arguments): \(result.err)") }
        return result.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func events(_ record: URL) -> [[String: Any]] {
        guard let text = try? String(contentsOf: record, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits (bounded) until the record shows `path` given `emblem` for `state`, among the
    /// events from index `after` on.
    private func waitForEmblem(_ record: URL, _ path: String, _ state: String, _ emblem: String, after: Int = 0,
                               timeout: Duration = .seconds(30)) -> Bool {
        eventually(timeout: timeout, every: .milliseconds(100)) {
            events(record).dropFirst(after).contains {
                $0["event"] as? String == "emblem" && $0["path"] as? String == path && $0["state"] as? String == state
                    && $0["emblem"] as? String == emblem
            }
        }
    }
}
