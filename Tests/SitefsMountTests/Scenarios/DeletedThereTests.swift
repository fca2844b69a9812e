import Foundation
import SitefsTestSupport
import Testing

/// Deleted there, added or edited here: the edit wins. A file saved into a folder that
/// someone deleted on the server meanwhile makes the folder again there, with the file in
/// it, on the project's server and on WebDAV (Apache), and the mount shows it. The server is
/// checked through its own means (API or disk).
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse"))
struct DeletedThereTests {
    static let backends = ScenarioBackend.allCases

    @Test(arguments: backends)
    func aNewFileSavedIntoAFolderDeletedThereMakesTheFolderAgain(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.makeFolder("Harbour Tower/doomed")
            try server.write("Harbour Tower/doomed/keep.txt", "kept\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls 'Harbour Tower/doomed'").out == "keep.txt\n")
        try editWhileOpen(mount.path("Harbour Tower/doomed/late.txt"), to: "late text\n", creating: true) {
            try mount.server.remove("Harbour Tower/doomed")
            try waitUntilTheMountForgets("doomed", in: "Harbour Tower", mount)
        }
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/doomed/late.txt") == "late text\n")
        #expect(try mount.server.names(in: "Harbour Tower/doomed") == ["late.txt"], "what was deleted there stays deleted")
        try expectShown("Harbour Tower/doomed/late.txt", "late text\n", mount)
        let status = try mount.sitefs(["status", mount.mountpoint.path]).out
        #expect(status.contains("made again: Harbour Tower/doomed: deleted on the server while late.txt was saved into it"), "\(status)")
        #expect(!status.contains("failed"), "\(status)")
        #expect(mount.daemonLog.contains("Harbour Tower/doomed was deleted on the server while late.txt was saved into it here"))
    }

    @Test(arguments: backends)
    func anEditOfAFileInAFolderDeletedThereMakesBothAgain(_ backend: ScenarioBackend) throws {
        // Deleted there while open here: writers are not locked, as on a server without locks.
        let mount = try ScenarioMount(backend, extraMountArguments: ["--no-lock-writers"]) { server in
            try server.makeFolder("Harbour Tower/doomed")
            try server.write("Harbour Tower/doomed/form.txt", "blank form\n")
        }
        defer { mount.tearDown() }
        try editWhileOpen(mount.path("Harbour Tower/doomed/form.txt"), to: "filled in\n") {
            try mount.server.remove("Harbour Tower/doomed")
            try waitUntilTheMountForgets("doomed", in: "Harbour Tower", mount)
        }
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/doomed/form.txt") == "filled in\n")
        try expectShown("Harbour Tower/doomed/form.txt", "filled in\n", mount)
    }

    @Test(arguments: backends)
    func aFileTwoLevelsBelowADeletedFolderMakesTheWholeChainAgain(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.makeFolder("Harbour Tower/Block A")
            try server.makeFolder("Harbour Tower/Block A/Level 2")
            try server.write("Harbour Tower/Block A/old.txt", "old\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls 'Harbour Tower/Block A/Level 2'").status == 0)
        try editWhileOpen(mount.path("Harbour Tower/Block A/Level 2/deep.txt"), to: "deep\n", creating: true) {
            try mount.server.remove("Harbour Tower/Block A")
            try waitUntilTheMountForgets("Block A", in: "Harbour Tower", mount)
        }
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/Block A/Level 2/deep.txt") == "deep\n")
        #expect(try mount.server.names(in: "Harbour Tower/Block A") == ["Level 2"])
        try expectShown("Harbour Tower/Block A/Level 2/deep.txt", "deep\n", mount)
    }

    /// Offline: a folder made here inside a folder deleted there, files saved in both, and
    /// an edit of a file the folder held; replayed when the server is back, all of it arrives.
    @Test(arguments: backends)
    func madeOfflineInAFolderDeletedThereArrivesWhole(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend, throughFaultProxy: true, extraMountArguments: ["--no-lock-writers"]) { server in
            try server.makeFolder("Harbour Tower/doomed")
            try server.write("Harbour Tower/doomed/form.txt", "blank form\n")
        }
        defer { mount.tearDown() }
        let proxy = try #require(mount.proxy)
        #expect(try mount.shell("ls 'Harbour Tower/doomed'").out == "form.txt\n")
        try editWhileOpen(mount.path("Harbour Tower/doomed/form.txt"), to: "filled in offline\n") {
            proxy.mode = .refuse
            // A listing asks the server (WebDAV has no change feed to find it gone).
            try #require(eventually(timeout: .seconds(15), every: .milliseconds(300)) {
                _ = try? mount.shell("ls 'Harbour Tower/doomed' 'Harbour Tower' > /dev/null 2>&1")
                return (try? mount.sitefs(["status", mount.mountpoint.path]).out.contains("\noffline since ")) == true
            }, "the mount never said it is offline")
            let made = try mount.shell("""
                mkdir 'Harbour Tower/doomed/photos' && echo 'photo list' > 'Harbour Tower/doomed/photos/list.txt' \
                && echo 'new note' > 'Harbour Tower/doomed/note.txt'
                """)
            try #require(made.status == 0, "offline changes: \(made.err)")
            try mount.server.remove("Harbour Tower/doomed")
        }
        proxy.mode = .pass
        try mount.sync()
        #expect(try mount.server.text("Harbour Tower/doomed/form.txt") == "filled in offline\n")
        #expect(try mount.server.text("Harbour Tower/doomed/note.txt") == "new note\n")
        #expect(try mount.server.text("Harbour Tower/doomed/photos/list.txt") == "photo list\n")
        try expectShown("Harbour Tower/doomed/photos/list.txt", "photo list\n", mount)
        let status = try mount.sitefs(["status", mount.mountpoint.path]).out
        #expect(!status.contains("failed") && !status.contains("not applied"), "\(status)")
    }

    /// Renamed there, not deleted. Where the server keeps identities (sitefs-server) the new
    /// file goes into the folder under its new name; a WebDAV server knows items only by
    /// path, so the old path is made again with the file in it: both are on the server.
    @Test(arguments: backends)
    func aFileAddedToAFolderRenamedThereIsKept(_ backend: ScenarioBackend) throws {
        let mount = try ScenarioMount(backend) { server in
            try server.makeFolder("Harbour Tower/plans")
            try server.write("Harbour Tower/plans/a.txt", "a\n")
        }
        defer { mount.tearDown() }
        #expect(try mount.shell("ls 'Harbour Tower/plans'").out == "a.txt\n")
        try editWhileOpen(mount.path("Harbour Tower/plans/new.txt"), to: "new\n", creating: true) {
            try mount.server.rename("Harbour Tower/plans", to: "plans 2025")
        }
        try mount.sync()
        switch backend {
        case .sitefs:
            #expect(try mount.server.names(in: "Harbour Tower/plans 2025") == ["a.txt", "new.txt"])
            #expect(try mount.server.text("Harbour Tower/plans 2025/new.txt") == "new\n")
            #expect(try mount.server.read("Harbour Tower/plans") == nil)
            try expectShown("Harbour Tower/plans 2025/new.txt", "new\n", mount)
        default:
            #expect(try mount.server.names(in: "Harbour Tower/plans 2025") == ["a.txt"])
            #expect(try mount.server.text("Harbour Tower/plans/new.txt") == "new\n")
            try expectShown("Harbour Tower/plans/new.txt", "new\n", mount)
        }
    }

    /// Waits until a listing of `parent` on the mount no longer shows `name`: the mount has
    /// heard of the deletion (change feed, or a listing revalidated on WebDAV), so a save
    /// after this cannot learn the folder from the cache.
    private func waitUntilTheMountForgets(_ name: String, in parent: String, _ mount: ScenarioMount) throws {
        try #require(eventually(timeout: .seconds(20), every: .milliseconds(200)) {
            let listing = try mount.shell("ls '\(parent)'")
            return listing.status == 0 && !listing.out.split(separator: "\n").contains(Substring(name))
        }, "the mount still lists \(parent)/\(name)")
    }

    /// The mount shows `path` with `text` (once the change feed or a revalidated listing
    /// brings it).
    private func expectShown(_ path: String, _ text: String, _ mount: ScenarioMount) throws {
        var last = ""
        let shown = eventually(timeout: .seconds(20), every: .milliseconds(200)) {
            last = (try? mount.shell("cat '\(path)'").out) ?? ""
            return last == text
        }
        #expect(shown, "the mount shows \(path) as \(last.debugDescription)\nlog: \(mount.daemonLog.suffix(3000))")
    }
}
