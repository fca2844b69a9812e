import Foundation
import SitefsTestSupport
import Testing

/// The real `sitefs search`, `versions`, `restore` and `info` reading the daemon's answers:
/// a plain folder of the test's, with the answers set as its `user.*` attributes (ext4 keeps
/// them), stands in for the mount, so what is checked is what the commands ask, how they
/// follow pages, and what they print and set. The daemon's side is tested with the mount.
@Suite struct ControlCommandTests {
    /// A folder standing in for a mount point, removed afterwards.
    final class FakeMount: @unchecked Sendable {
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("sitefs-control-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(at: root) }

        func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

        /// Makes `relative` (a folder, or a file when `file`) and sets its attributes.
        func make(_ relative: String, file: Bool = false, _ attributes: [String: String]) throws {
            let url = root.appendingPathComponent(relative)
            if file {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data("twelve bytes".utf8).write(to: url)
            } else {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            }
            for (name, value) in attributes {
                let hex = "0x" + value.utf8.map { String(format: "%02x", $0) }.joined()
                let result = try run(URL(fileURLWithPath: "/usr/bin/setfattr"), ["-n", name, "-v", hex, url.path])
                guard result.status == 0 else { throw ProcessFailure("setfattr \(name): \(result.err)") }
            }
        }

        func attribute(_ name: String, of relative: String) throws -> String {
            try run(URL(fileURLWithPath: "/usr/bin/getfattr"), ["--only-values", "-n", name, path(relative)]).out
        }

        func sitefs(_ arguments: [String]) throws -> ProcessOutcome {
            try run(BuiltProducts.executable("sitefs"), arguments, timeout: 30)
        }
    }

    static func hit(_ path: String, matched: String, snippet: String?) -> String {
        let snippetJSON = snippet.map { "\"\($0)\"" } ?? "null"
        let name = (path as NSString).lastPathComponent
        return #"{"entry":"\#(name)","path":"\#(path)","matched":[\#(matched)],"snippet":\#(snippetJSON),"modified_at":"2026-11-27T10:14:03Z","size":12,"kind":"file"}"#
    }

    @Test func searchReadsEveryPageOfTheSearchFolderAndPrintsThreeWays() throws {
        let mount = try FakeMount()
        let folder = #".search/level 1 plan site:"Harbour Tower" type:pdf"#
        try mount.make(folder, [
            "user.sitefs.control.results": #"{"coverage":"server","note":null,"hits":[\#(Self.hit("Harbour Tower/Plans/level 1 plan.pdf", matched: #""name""#, snippet: nil))],"next":"p2","error":null}"#,
            "user.sitefs.control.results:p2": #"{"coverage":"server","note":null,"hits":[\#(Self.hit("Harbour Tower/Notes/site.pdf", matched: #""content""#, snippet: "the level 1 plan"))],"next":null,"error":null}"#,
        ])
        let arguments = ["search", mount.root.path, "level", "1 plan", "--site", "Harbour Tower", "--type", "PDF"]
        let lines = try mount.sitefs(arguments)
        #expect(lines.status == 0, "\(lines.err)")
        #expect(lines.out == """
            \(mount.path("Harbour Tower/Plans/level 1 plan.pdf"))  name
            \(mount.path("Harbour Tower/Notes/site.pdf"))  text: …the level 1 plan…

            """)
        #expect(lines.err.isEmpty)

        let paths = try mount.sitefs(arguments + ["-0"])
        #expect(paths.out == mount.path("Harbour Tower/Plans/level 1 plan.pdf") + "\0" + mount.path("Harbour Tower/Notes/site.pdf") + "\0")

        let json = try mount.sitefs(arguments + ["--json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(document["search_folder"] as? String == mount.path(folder))
        #expect((document["hits"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
                == [mount.path("Harbour Tower/Plans/level 1 plan.pdf"), mount.path("Harbour Tower/Notes/site.pdf")])
    }

    /// Names only (a WebDAV mount): said once on standard error, the hits as usual.
    @Test func aSearchOfListedNamesSaysSo() throws {
        let mount = try FakeMount()
        try mount.make(".search/plan", [
            "user.sitefs.control.results": #"{"coverage":"listed_names","note":"searched names only, over folders this mount has listed: this server does not search","hits":[\#(Self.hit("S/plan.txt", matched: #""name""#, snippet: nil))],"next":null,"error":null}"#,
        ])
        let result = try mount.sitefs(["search", mount.root.path, "plan"])
        #expect(result.status == 0)
        #expect(result.out == mount.path("S/plan.txt") + "  name\n")
        #expect(result.err == "searched names only, over folders this mount has listed: this server does not search\n")
    }

    @Test func aSearchTheDaemonFailedEndsWithItsReason() throws {
        let mount = try FakeMount()
        try mount.make(".search/plan", [
            "user.sitefs.control.results": #"{"coverage":"server","note":null,"hits":[],"next":null,"error":"the server cannot be reached\u001b[2J"}"#,
        ])
        let result = try mount.sitefs(["search", mount.root.path, "plan"])
        #expect(result.status == 1)
        #expect(result.err.contains("search failed: the server cannot be reached\\u{1b}[2J"), "\(result.err)")
        // Not a mount at all; a search that cannot be a folder name.
        let elsewhere = try mount.sitefs(["search", FileManager.default.temporaryDirectory.path, "plan"])
        #expect(elsewhere.status != 0 && elsewhere.err.contains("is not a sitefs mount"), "\(elsewhere.err)")
        let slash = try mount.sitefs(["search", mount.root.path, "plans/2026"])
        #expect(slash.status != 0 && slash.err.contains("may not contain '/'"), "\(slash.err)")
    }

    static let versions = #"{"versions":[{"id":"e3","modified_at":"2026-11-27T10:14:03Z","modified_by":"Anna Berger","size":12288,"current":true},{"id":"e2","modified_at":"2026-11-26T09:00:00Z","modified_by":"ben","size":812,"current":false},{"id":"e1","modified_at":"2026-11-01T08:00:00Z","modified_by":null,"size":10,"current":false}],"error":null}"#

    @Test func versionsPrintATableAndRestoreSetsTheChosenID() throws {
        let mount = try FakeMount()
        try mount.make("S/plan.odt", file: true, ["user.sitefs.control.versions": Self.versions])
        let file = mount.path("S/plan.odt")
        let table = try mount.sitefs(["versions", file])
        #expect(table.status == 0, "\(table.err)")
        let lines = table.out.split(separator: "\n")
        #expect(lines.count == 4 && lines[0].hasPrefix("VERSION") && lines[1].hasSuffix("(current)") && lines[2].contains(" ben "))
        let json = try mount.sitefs(["versions", file, "--json"])
        let shortIDs = try #require((try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])?["versions"] as? [[String: Any]])
            .compactMap { $0["short"] as? String }
        #expect(shortIDs.count == 3)

        // Two back: e1; by its short id: e2.
        let back = try mount.sitefs(["restore", file, "-2"])
        #expect(back.status == 0, "\(back.err)")
        #expect(back.out.hasPrefix("restored \(file) to version \(shortIDs[2]) of "))
        #expect(back.out.hasSuffix("; it is now the newest version\n") && !back.out.contains(" by "))
        #expect(try mount.attribute("user.sitefs.control.restore", of: "S/plan.odt") == "e1")
        let short = try mount.sitefs(["restore", file, shortIDs[1]])
        #expect(short.out.contains(" by ben; it is now the newest version"), "\(short.out) \(short.err)")
        #expect(try mount.attribute("user.sitefs.control.restore", of: "S/plan.odt") == "e2")

        let tooFar = try mount.sitefs(["restore", file, "-3"])
        #expect(tooFar.status != 0 && tooFar.err.contains("there are 2 older versions, not 3"), "\(tooFar.err)")
    }

    @Test func versionsTellTheDaemonsReason() throws {
        let mount = try FakeMount()
        try mount.make("S/plan.odt", file: true,
                       ["user.sitefs.control.versions": #"{"versions":[],"error":"this WebDAV server keeps no versions"}"#])
        let result = try mount.sitefs(["versions", mount.path("S/plan.odt")])
        #expect(result.status == 1 && result.err.contains("plan.odt: this WebDAV server keeps no versions"), "\(result.err)")
    }

    @Test func infoShowsWhatTheDaemonKnows() throws {
        let mount = try FakeMount()
        try mount.make("S/plan.odt", file: true, [
            "user.sitefs.state": "online-only", "user.sitefs.id": "0FVhTf1kzA4wWgk8Qx7c-w", "user.sitefs.version": "9f86d081",
            "user.sitefs.created_by": "anna", "user.sitefs.modified_by": "Anna Berger", "user.sitefs.version_count": "4",
        ])
        let result = try mount.sitefs(["info", mount.path("S/plan.odt")])
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == """
            Name:        plan.odt
            Path:        \(mount.path("S/plan.odt"))
            Kind:        file
            Size:        12 bytes
            State:       online-only
            Created by:  anna
            Modified by: Anna Berger
            Versions:    4
            Server id:   0FVhTf1kzA4wWgk8Qx7c-w
            Version:     9f86d081

            """)
        let json = try mount.sitefs(["info", mount.path("S/plan.odt"), "--json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(document["version_count"] as? Int == 4 && document["created_at"] == nil)
        let plain = try mount.sitefs(["info", mount.root.path])
        #expect(plain.status != 0 && plain.err.contains("is not an item in a sitefs mount"), "\(plain.err)")
    }
}
