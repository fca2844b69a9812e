import Foundation
import SitefsAPI
import SitefsTestSupport
import Testing

/// What goes to the server without waiting, on a real mount of sitefs-server: new files on
/// several connections without `sitefs sync`, one refused among them failing alone; `rm -r`
/// as one delete of the folder, and one by one (each conditional) when the server's folder
/// holds something the mount never saw; saves and renames that no editor can fold, at once
/// though the write-back delay is an hour.
@Suite(.serialized, .enabled(if: fuseAvailable, "needs /dev/fuse and fusermount3"))
struct WireSpeedMountTests {
    /// The server's requests so far of `method` on items (its log).
    private func requests(_ fixture: MountFixture, _ method: String) -> Int {
        fixture.server.log.components(separatedBy: "\(method) /v1/items/").count - 1
    }

    @Test func newFilesGoWithoutSyncAndOneTheServerRefusesFailsAlone() throws {
        let fixture = try MountFixture(serverArguments: ["--max-upload", "4096"])
        defer { fixture.tearDown() }
        #expect(try fixture.shell("mkdir 'Harbour Tower/Batch'").status == 0)
        // 100 new files; f50 is larger than the server takes.
        let made = try fixture.shell("""
            for i in $(seq 1 100); do
              if [ $i = 50 ]; then head -c 8192 /dev/zero | tr '\\0' x > "Harbour Tower/Batch/f$i.txt"
              else printf 'file %d\\n' $i > "Harbour Tower/Batch/f$i.txt"; fi
            done
            """)
        #expect(made.status == 0, "\(made.err)")
        let folder = try #require(try fixture.serverItem("Harbour Tower/Batch"))
        // No `sitefs sync`: they go by themselves.
        #expect(try eventually(timeout: .seconds(30)) { try fixture.children(folder.id).count == 99 })
        let names = Set(try fixture.children(folder.id).map(\.name))
        #expect(names == Set((1...100).filter { $0 != 50 }.map { "f\($0).txt" }))
        #expect(try fixture.serverContent("Harbour Tower/Batch/f7.txt") == "file 7\n")
        #expect(try fixture.serverContent("Harbour Tower/Batch/f100.txt") == "file 100\n")
        // The refused one is named as failed, and its content is still here.
        let synced = try fixture.sitefs(["sync", fixture.mountpoint.path, "--timeout", "60"])
        let status = try fixture.sitefs(["status", fixture.mountpoint.path])
        #expect(status.out.contains("f50.txt"), "status: \(status.out)\nsync: \(synced.out) \(synced.err)")
        #expect(try fixture.shell("wc -c < 'Harbour Tower/Batch/f50.txt'").out.trimmingCharacters(in: .whitespacesAndNewlines) == "8192")
        #expect(try fixture.children(folder.id).count == 99)
    }

    @Test func rmOfAFolderIsOneDeleteAndWhatTheMountNeverSawIsKept() throws {
        // No change feed and no revalidation: what someone adds stays unseen here.
        let fixture = try MountFixture(extraMountArguments: ["--poll-interval", "3600", "--change-wait", "0", "--cache-ttl", "3600"])
        defer { fixture.tearDown() }
        #expect(try fixture.shell("mkdir 'Harbour Tower/Old' 'Harbour Tower/Shared' && "
                                  + "for i in $(seq 1 200); do echo $i > \"Harbour Tower/Old/f$i\"; done && "
                                  + "for i in 1 2 3; do echo $i > \"Harbour Tower/Shared/f$i\"; done").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let old = try #require(try fixture.serverItem("Harbour Tower/Old"))
        #expect(try fixture.children(old.id).count == 200)

        // rm -r: one DELETE of the folder, not 201.
        let deletesBefore = requests(fixture, "DELETE")
        #expect(try fixture.shell("rm -r 'Harbour Tower/Old'").status == 0)
        #expect(try eventually(timeout: .seconds(20)) { try fixture.serverItem("Harbour Tower/Old") == nil })
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        #expect(requests(fixture, "DELETE") - deletesBefore == 1)

        // Someone adds a file the mount has not listed: the mount's deletes go one by one,
        // each its own, and the folder and the other's file stay.
        _ = try #require(try fixture.shell("ls 'Harbour Tower/Shared'").out.split(separator: "\n").count == 3)
        _ = try fixture.serverFile("theirs.txt", Data("someone else's\n".utf8), in: "Harbour Tower/Shared")
        #expect(try fixture.shell("rm -r 'Harbour Tower/Shared'").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let shared = try #require(try fixture.serverItem("Harbour Tower/Shared"), "the folder with someone else's file went")
        #expect(try fixture.children(shared.id).map(\.name) == ["theirs.txt"])
        #expect(try fixture.shell("ls 'Harbour Tower/Shared'").out == "theirs.txt\n")
    }

    @Test func aFolderRemovedAndMadeAgainAtOnceIsANewFolderOnTheServer() throws {
        let fixture = try MountFixture()
        defer { fixture.tearDown() }
        #expect(try fixture.shell("mkdir 'Harbour Tower/build' && echo old > 'Harbour Tower/build/out.o'").status == 0)
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let old = try #require(try fixture.serverItem("Harbour Tower/build"))
        // The mkdir goes after the queued delete of the old folder, not into its name.
        let again = try fixture.shell("rm -r 'Harbour Tower/build' && mkdir 'Harbour Tower/build' && echo new > 'Harbour Tower/build/out.o'")
        #expect(again.status == 0, "\(again.err)")
        #expect(try fixture.sitefs(["sync", fixture.mountpoint.path]).status == 0)
        let made = try #require(try fixture.serverItem("Harbour Tower/build"))
        #expect(made.id != old.id)
        #expect(try fixture.serverContent("Harbour Tower/build/out.o") == "new\n")
        #expect(try fixture.shell("cat 'Harbour Tower/build/out.o'").out == "new\n")
    }

    @Test func savesAndRenamesNoEditorFoldsGoWithoutTheWriteBackDelay() throws {
        let fixture = try MountFixture(extraMountArguments: ["--write-back-delay", "3600"])
        defer { fixture.tearDown() }
        _ = try fixture.serverFile("report.csv", Data("row 1,open\nrow 2,open\n".utf8), in: "Harbour Tower")
        _ = try fixture.serverFile("notes.txt", Data("notes\n".utf8), in: "Harbour Tower")
        #expect(try eventually(timeout: .seconds(15)) { try fixture.shell("ls 'Harbour Tower'").out.contains("notes.txt") })
        // sed -i: a temp file renamed over the document; the new version goes at once.
        #expect(try fixture.shell("sed -i 's/row 1,open/row 1,checked/' 'Harbour Tower/report.csv'").status == 0)
        #expect(try eventually(timeout: .seconds(10)) {
            try fixture.serverContent("Harbour Tower/report.csv") == "row 1,checked\nrow 2,open\n"
        })
        // mv, and an edit in place.
        #expect(try fixture.shell("mv 'Harbour Tower/notes.txt' 'Harbour Tower/minutes.txt'").status == 0)
        #expect(try eventually(timeout: .seconds(10)) { try fixture.serverItem("Harbour Tower/minutes.txt") != nil })
        #expect(try fixture.shell("echo more >> 'Harbour Tower/minutes.txt'").status == 0)
        #expect(try eventually(timeout: .seconds(10)) { try fixture.serverContent("Harbour Tower/minutes.txt") == "notes\nmore\n" })
        // A new file waits only its short delay.
        #expect(try fixture.shell("echo draft > 'Harbour Tower/draft.txt'").status == 0)
        #expect(try eventually(timeout: .seconds(10)) { try fixture.serverContent("Harbour Tower/draft.txt") == "draft\n" })
    }
}
