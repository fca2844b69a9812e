import Foundation
import SitefsAPI
import SitefsProvider
import SitefsTestSupport
import SitefsWebDAVBackend
import Testing

/// Symbolic links against real servers, kept as rclone keeps them (`NAME.rclonelink` holding
/// the target), with the target also in `urn:sitefs:symlink-target` where the server keeps
/// properties.
@Suite struct WebDAVSymlinkTests {
    typealias World = ModesAndLinksWorld
    typealias Server = ModesAndLinksServer

    @Test(arguments: Server.allCases)
    func aLinkIsMadeListedReadRenamedAndDeleted(_ kind: Server) throws {
        try World.with(kind) { world in
            let plans = try #require(try world.item("Harbour Tower/Plans", world.laptop))
            let target = Array("../Plans/level1.txt".utf8)
            let link = try world.laptop.createSymlink(named: "latest", in: plans.identifier, target: target)
            #expect(link.kind == .symlink && link.name == "latest" && link.size == Int64(target.count))
            #expect(link.symlinkTarget == target)
            #expect(!link.capabilities.contains(.write))
            #expect(Array(try world.server.read("Harbour Tower/Plans/latest.rclonelink")) == target, "rclone's file")
            #expect(!world.server.exists("Harbour Tower/Plans/latest"))
            // Another mount lists it as a link; the target comes with the listing where the
            // server keeps properties, and from the content anyway.
            let listed = try world.listed("latest", in: "Harbour Tower/Plans", world.desktop)
            #expect(listed.count == 1)
            let seen = try #require(listed.first)
            #expect(seen.kind == .symlink && seen.size == Int64(target.count))
            #expect(seen.symlinkTarget == (kind.keepsProperties ? target : nil))
            #expect(try world.content(seen, world.desktop) == target)
            #expect(try world.listed("latest.rclonelink", in: "Harbour Tower/Plans", world.desktop).isEmpty)
            // A second link of the name, or a file, is refused; so is a plain file named like a link's file.
            #expect(throws: ProviderError.self) { try world.laptop.createSymlink(named: "latest", in: plans.identifier, target: [0x61]) }
            // Renamed: the file keeps its suffix, the target its property.
            let renamed = try world.laptop.update(link.identifier, ItemChanges(name: "newest"), baseVersion: nil)
            #expect(renamed.kind == .symlink && renamed.name == "newest" && renamed.identifier == link.identifier)
            #expect(world.server.exists("Harbour Tower/Plans/newest.rclonelink"))
            #expect(!world.server.exists("Harbour Tower/Plans/latest.rclonelink"))
            let again = try #require(try world.listed("newest", in: "Harbour Tower/Plans", world.desktop).first)
            #expect(again.symlinkTarget == (kind.keepsProperties ? target : nil))
            #expect(try world.content(again, world.desktop) == target)
            // Deleted.
            try world.laptop.delete(renamed.identifier, baseVersion: nil)
            #expect(!world.server.exists("Harbour Tower/Plans/newest.rclonelink"))
            #expect(try world.listed("newest", in: "Harbour Tower/Plans", world.desktop).isEmpty)
        }
    }

    @Test(arguments: Server.allCases)
    func badTargetsAndNamesAreRefused(_ kind: Server) throws {
        try World.with(kind) { world in
            let plans = try #require(try world.item("Harbour Tower/Plans", world.laptop))
            let targets: [[UInt8]] = [[], [0x61, 0x00, 0x62], [UInt8](repeating: 0x61, count: ProviderItem.maximumSymlinkTarget + 1)]
            for target in targets {
                #expect(throws: ProviderError.self) { try world.laptop.createSymlink(named: "bad", in: plans.identifier, target: target) }
            }
            // The longest name that still fits with the suffix, and one byte more.
            let longest = String(repeating: "n", count: ItemName.maximumBytes - 11)
            let made = try world.laptop.createSymlink(named: longest, in: plans.identifier, target: Array("t".utf8))
            #expect(made.name == longest)
            do {
                _ = try world.laptop.createSymlink(named: longest + "n", in: plans.identifier, target: Array("t".utf8))
                Issue.record("a name too long for its suffix was taken")
            } catch {
                guard case ProviderError.invalidName = error else { Issue.record("\(error)"); return }
            }
            // A plain file may not take a link's file name; a link may not take a file's name.
            #expect(throws: ProviderError.self) {
                try world.laptop.createSymlink(named: "level1.txt", in: plans.identifier, target: Array("t".utf8))
            }
            // A folder made on the server since the listing: asked, not only looked up.
            try world.server.makeFolder("Harbour Tower/Plans/Sub")
            do {
                _ = try world.laptop.createSymlink(named: "Sub", in: plans.identifier, target: Array("t".utf8))
                Issue.record("a link took a folder's name")
            } catch {
                guard case ProviderError.nameTaken = error else { Issue.record("\(error)"); return }
            }
            #expect(!world.server.exists("Harbour Tower/Plans/Sub.rclonelink"))
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-link-\(UUID().uuidString)")
            try Data("x".utf8).write(to: scratch)
            defer { try? FileManager.default.removeItem(at: scratch) }
            do {
                _ = try world.laptop.createFile(named: "notes.rclonelink", in: plans.identifier, contentsOf: scratch.path, modified: nil, progress: nil)
                Issue.record("a plain file took a link's file name")
            } catch {
                guard case ProviderError.invalidName = error else { Issue.record("\(error)"); return }
            }
        }
    }

    /// A tree rclone (or anything) wrote: `.rclonelink` files put by plain PUT read as links,
    /// targets from their content; odd ones stay plain files; a link beside a file of its
    /// name gives way to the file; a target property that does not agree is not believed.
    @Test(arguments: Server.allCases)
    func linksWrittenByOthersReadAsLinks(_ kind: Server) throws {
        try World.with(kind) { world in
            let target = "/srv/share/ü ber/plans"
            let put = try world.curl(["-X", "PUT", "--data-binary", target, world.url("Harbour Tower/Plans/shared.rclonelink")])
            #expect(put.hasSuffix("201"), "\(put)")
            try world.server.writeFile("Harbour Tower/Plans/empty.rclonelink", "")
            try world.server.writeFile("Harbour Tower/Plans/.rclonelink", "x")
            try world.server.writeFile("Harbour Tower/Plans/level1.txt.rclonelink", "elsewhere")
            let link = try #require(try world.listed("shared", in: "Harbour Tower/Plans", world.laptop).first)
            #expect(link.kind == .symlink && link.symlinkTarget == nil && link.size == Int64(target.utf8.count))
            #expect(try world.content(link, world.laptop) == Array(target.utf8))
            #expect(try world.listed("empty.rclonelink", in: "Harbour Tower/Plans", world.laptop).first?.kind == .file)
            // Not a link (nginx lists no dot files at all).
            #expect(try world.listed(".rclonelink", in: "Harbour Tower/Plans", world.laptop).first?.kind != .symlink)
            let clash = try world.listed("level1.txt", in: "Harbour Tower/Plans", world.laptop)
            #expect(clash.count == 1 && clash.first?.kind == .file, "the plain file wins: \(clash)")
            guard kind.keepsProperties else { return }
            // A property another client set: believed when it agrees with the content's length,
            // not when it is malformed or stale.
            let encoded = "/srv/share/%C3%BC%20ber/plans"
            #expect(try world.proppatch("Harbour Tower/Plans/shared.rclonelink", "symlink-target", encoded).hasSuffix("207"))
            #expect(try world.listed("shared", in: "Harbour Tower/Plans", world.laptop).first?.symlinkTarget == Array(target.utf8))
            #expect(try world.proppatch("Harbour Tower/Plans/shared.rclonelink", "symlink-target", "/srv/%ZZ/x").hasSuffix("207"))
            #expect(try world.listed("shared", in: "Harbour Tower/Plans", world.laptop).first?.symlinkTarget == nil)
            #expect(try world.proppatch("Harbour Tower/Plans/shared.rclonelink", "symlink-target", "/elsewhere").hasSuffix("207"))
            let stale = try #require(try world.listed("shared", in: "Harbour Tower/Plans", world.laptop).first)
            #expect(stale.kind == .symlink && stale.symlinkTarget == nil)
        }
    }
}
