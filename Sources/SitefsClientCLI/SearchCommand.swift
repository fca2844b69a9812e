import ArgumentParser
import CLinux
import Foundation
import SitefsCommandLine
import SitefsMountControl

/// `sitefs search MOUNT WORDS...`: the mount's search folder for those words
/// (`MOUNT/.search/NAME`, see `SearchFolderName`), its results read from the daemon through
/// `user.sitefs.control.results` and printed in the daemon's order.
struct Search: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search a mount's documents: names and, on sitefs-server, their text.",
        discussion: """
            Every word must match, in the name or in the text (word beginnings; case and accents \
            ignored). The same search is a folder: `ls "MOUNT/.search/level 1 plan site:\\"Harbour Tower\\""`. \
            On a WebDAV mount only names are searched, over the folders the mount has listed \
            (said on standard error).
            """)

    @Argument(help: "The mount point.") var mountpoint: String
    @Argument(help: "The words to search for.") var words: [String]
    @Option(help: "Only in this site (its name).") var site: String?
    @Option(help: "Only files with this extension (pdf, odt, ...).") var type: String?
    @Option(help: "Only items modified on or after this day (YYYY-MM-DD).") var since: String?
    @Flag(name: [.customShort("0"), .customLong("print0")], help: "Print only the paths, each ended by NUL (for xargs -0).")
    var print0 = false
    @Flag(help: "Print one JSON document.") var json = false

    func validate() throws {
        if print0 && json { throw ValidationError("give -0 or --json, not both") }
    }

    func run() throws {
        let name: SearchFolderName
        do {
            name = try SearchFolderName(words: words, site: site, fileType: type, since: since)
        } catch {
            throw ValidationError(error.description)
        }
        let mount = ControlAttributes.absolute(mountpoint)
        let folder = (mount == "/" ? "" : mount) + "/.search/" + name.name
        let output = SearchOutput(mount: mount, width: print0 || json ? nil : ControlAttributes.terminalWidth())
        var collected: [SearchResultHit] = []
        var coverage: String?, note: String?
        var skipped: [String] = []
        do {
            try SearchResultsReader.readAll(read: { attribute in
                switch ControlAttributes.read(attribute, of: folder) {
                case .success(let bytes): return try ControlAttributes.decode(SearchResultsPage.self, bytes)
                case .failure(let failure): throw UserFacingError(Self.explain(failure, mount: mount))
                }
            }, receive: { page in
                if coverage == nil {
                    coverage = page.coverage
                    note = page.note
                    if page.coverage == "listed_names", !json {
                        let said = page.note ?? "searched names only, over folders this mount has listed: this server does not search"
                        FileHandle.standardError.write(Data((TerminalText.escaped(said) + "\n").utf8))
                    }
                }
                for hit in page.hits {
                    if let problem = hit.problem {
                        skipped.append("\(TerminalText.escaped(hit.path)): \(problem)")
                        continue
                    }
                    if json {
                        collected.append(hit)
                    } else if print0 {
                        FileHandle.standardOutput.write(Data((output.fullPath(hit) + "\0").utf8))
                    } else {
                        print(output.line(hit))
                    }
                }
            })
        } catch let error as SearchReadError {
            if json { print(output.json(searchFolder: folder, coverage: coverage, note: note, hits: collected, error: error.description)) }
            throw UserFacingError("search failed: \(TerminalText.escaped(error.description))")
        }
        if json { print(output.json(searchFolder: folder, coverage: coverage, note: note, hits: collected, error: nil)) }
        for line in skipped { FileHandle.standardError.write(Data("left out: \(line)\n".utf8)) }
    }

    /// A failed read of the results: the general cases, and a folder that does not exist
    /// told apart (a daemon from before search, or a path that is no mount point).
    static func explain(_ failure: ControlAttributes.Errno, mount: String) -> String {
        guard failure.code == ENOENT || failure.code == ENOTDIR || failure.code == ENODATA || failure.code == ENOTSUP else {
            return ControlAttributes.explain(failure, path: mount, feature: "search")
        }
        let shown = TerminalText.escaped(mount)
        if case .success = ControlAttributes.read("user.sitefs.state", of: mount) {
            return "\(shown) is a folder in a sitefs mount; give the mount point (and --site to search one site)"
        }
        switch ControlAttributes.read("user.sitefs.status", of: mount) {
        case .success, .failure(ControlAttributes.Errno(EACCES)), .failure(ControlAttributes.Errno(EPERM)):
            return "the sitefs daemon of \(shown) predates search: unmount and mount again to update it"
        case .failure(ControlAttributes.Errno(ENOTCONN)):
            return ControlAttributes.explain(ControlAttributes.Errno(ENOTCONN), path: mount, feature: "search")
        default:
            return "\(shown) is not a sitefs mount"
        }
    }
}
