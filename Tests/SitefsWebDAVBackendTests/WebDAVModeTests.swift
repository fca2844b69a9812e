import Foundation
import Logging
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// chmod against real servers: kept as the dead property `urn:sitefs:mode` where the server
/// keeps properties (a second mount reads it back, and it moves with the file), kept by the
/// mount alone, in its identity table, where it does not (said once in the log).
@Suite struct WebDAVModeTests {
    typealias World = ModesAndLinksWorld
    typealias Server = ModesAndLinksServer

    @Test(arguments: Server.keeping)
    func aModeIsKeptOnTheServerAndMovesWithTheFile(_ kind: Server) throws {
        try World.with(kind) { world in
            let file = try #require(try world.item("Harbour Tower/Plans/level1.txt", world.laptop))
            #expect(file.mode == nil)
            let changed = try world.laptop.update(file.identifier, ItemChanges(mode: 0o755), baseVersion: nil)
            #expect(changed.mode == 0o755)
            #expect(changed.version == file.version, "a chmod changes no content")
            // Another mount reads it from the server.
            #expect(try world.item("Harbour Tower/Plans/level1.txt", world.desktop)?.mode == 0o755)
            // The setuid, setgid and sticky bits are permission bits too.
            _ = try world.laptop.update(file.identifier, ItemChanges(mode: 0o4710), baseVersion: nil)
            #expect(try world.item("Harbour Tower/Plans/level1.txt", world.desktop)?.mode == 0o4710)
            // A site's (a folder of the server's, not renamed here, but chmod-able).
            let site = try #require(try world.item("Harbour Tower", world.laptop))
            #expect(try world.laptop.update(site.identifier, ItemChanges(mode: 0o750), baseVersion: nil).mode == 0o750)
            #expect(try world.item("Harbour Tower", world.desktop)?.mode == 0o750)
            // A folder's.
            let plans = try #require(try world.item("Harbour Tower/Plans", world.laptop))
            _ = try world.laptop.update(plans.identifier, ItemChanges(mode: 0o700), baseVersion: nil)
            #expect(try world.item("Harbour Tower/Plans", world.desktop)?.mode == 0o700)
            // The property moves with the file (MOVE), and a rename with a mode sets both.
            let renamed = try world.laptop.update(file.identifier, ItemChanges(name: "level-one.txt", mode: 0o640), baseVersion: nil)
            #expect(renamed.name == "level-one.txt" && renamed.mode == 0o640)
            #expect(try world.item("Harbour Tower/Plans/level-one.txt", world.desktop)?.mode == 0o640)
            let moved = try world.laptop.update(renamed.identifier, ItemChanges(name: "level-1.txt"), baseVersion: nil)
            #expect(moved.mode == 0o640)
            #expect(try world.item("Harbour Tower/Plans/level-1.txt", world.desktop)?.mode == 0o640)
            #expect(!world.laptopLog.messages.contains { $0.contains("keeps no properties") })
        }
    }

    @Test(arguments: Server.notKeeping)
    func whereTheServerKeepsNoPropertiesTheMountKeepsModes(_ kind: Server) throws {
        try World.with(kind) { world in
            let file = try #require(try world.item("Harbour Tower/Plans/level1.txt", world.laptop))
            let changed = try world.laptop.update(file.identifier, ItemChanges(mode: 0o600), baseVersion: nil)
            #expect(changed.mode == 0o600)
            #expect(try world.item("Harbour Tower/Plans/level1.txt", world.laptop)?.mode == 0o600)
            // Only this mount has it.
            #expect(try world.item("Harbour Tower/Plans/level1.txt", world.desktop)?.mode == nil)
            // It follows a rename done here, and goes with a delete.
            let renamed = try world.laptop.update(file.identifier, ItemChanges(name: "level-one.txt"), baseVersion: nil)
            #expect(renamed.mode == 0o600)
            #expect(try world.item("Harbour Tower/Plans/level-one.txt", world.laptop)?.mode == 0o600)
            let plans = try #require(try world.item("Harbour Tower/Plans", world.laptop))
            _ = try world.laptop.update(plans.identifier, ItemChanges(mode: 0o751), baseVersion: nil)
            let folder = try world.laptop.update(plans.identifier, ItemChanges(name: "Drawings"), baseVersion: nil)
            #expect(folder.mode == 0o751)
            #expect(try world.item("Harbour Tower/Drawings/level-one.txt", world.laptop)?.mode == 0o600, "a folder's move carries its files'")
            try world.laptop.delete(renamed.identifier, baseVersion: nil)
            try world.server.writeFile("Harbour Tower/Drawings/level-one.txt", "another\n")
            #expect(try world.item("Harbour Tower/Drawings/level-one.txt", world.laptop)?.mode == nil)
            // Said once, however many modes are set.
            let said = world.laptopLog.messages.filter { $0.contains("this server keeps no properties; modes are kept on this mount only") }
            #expect(said.count == 1, "\(world.laptopLog.messages)")
        }
    }

    /// Where the server keeps no properties, the mode is kept with the item's identity: a
    /// remount with the same cache (identity table) still shows it, and a save by rename over
    /// the file (`replaceExisting`) shows the moved file's mode.
    @Test(arguments: Server.notKeeping)
    func modesKeptByTheMountOutliveIt(_ kind: Server) throws {
        try World.with(kind) { world in
            let table = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-modes-\(UUID().uuidString).sqlite")
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: table.path + suffix) } }
            let mount = { () throws -> WebDAVDocumentBackend in
                WebDAVDocumentBackend(location: try #require(WebDAVLocation(world.server.collectionURL)),
                                      credentials: FixedAuthorization(world.authorization),
                                      identities: try IdentityTable(path: table.path), logger: Logger(label: "mount"))
            }
            do {
                let first = try mount()
                let file = try #require(try world.item("Harbour Tower/Plans/level1.txt", first))
                _ = try first.update(file.identifier, ItemChanges(mode: 0o640), baseVersion: nil)
                try world.server.writeFile("Harbour Tower/Plans/level1.txt.tmp", "saved\n")
                let temporary = try #require(try world.item("Harbour Tower/Plans/level1.txt.tmp", first))
                _ = try first.update(temporary.identifier, ItemChanges(mode: 0o600), baseVersion: nil)
                let saved = try first.update(temporary.identifier, ItemChanges(name: "level1.txt", replaceExisting: true), baseVersion: nil)
                #expect(saved.identifier == file.identifier && saved.mode == 0o600)
            }
            let second = try mount()
            #expect(try world.item("Harbour Tower/Plans/level1.txt", second)?.mode == 0o600)
        }
    }

    /// Values of `urn:sitefs:mode` another client set that are not 1 to 4 octal digits are
    /// ignored (the item shows no mode), and said in the log.
    @Test(arguments: Server.keeping)
    func malformedModesAreIgnored(_ kind: Server) throws {
        try World.with(kind) { world in
            for (index, value) in ["0999", "17777", "-755", "0x1ed", "rwxr-xr-x", "", "7 55", "99999999999999999999"].enumerated() {
                let name = "odd-\(index).txt"
                try world.server.writeFile("Harbour Tower/Plans/\(name)", "x")
                let answer = try world.proppatch("Harbour Tower/Plans/\(name)", "mode", value)
                #expect(answer.hasSuffix("207"), "\(answer)")
            }
            try world.server.writeFile("Harbour Tower/Plans/good.txt", "x")
            _ = try world.proppatch("Harbour Tower/Plans/good.txt", "mode", " 755 ")
            let folder = try #require(try world.item("Harbour Tower/Plans", world.laptop))
            let items = try world.laptop.children(of: folder.identifier, after: nil, limit: 1000).items
            for item in items where item.name.hasPrefix("odd-") {
                #expect(item.mode == nil, "\(item.name)")
                #expect(item.kind == .file)
            }
            #expect(items.first { $0.name == "good.txt" }?.mode == 0o755, "whitespace around the digits is XML's, not the value's")
            #expect(world.laptopLog.messages.contains { $0.contains("ignoring a urn:sitefs: property") }, "\(world.laptopLog.messages)")
        }
    }
}
