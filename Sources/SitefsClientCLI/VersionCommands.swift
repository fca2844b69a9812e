import ArgumentParser
import CLinux
import Foundation
import SitefsCommandLine
import SitefsMountControl

/// `sitefs versions FILE`: the file's stored versions, newest first, from the daemon
/// (`user.sitefs.control.versions`), each with the short id `sitefs restore` takes.
struct Versions: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a file's stored versions, newest first.",
        discussion: "sitefs-server keeps every version; WebDAV servers keep none. `sitefs restore FILE VERSION` brings one back.")

    @Argument(help: "A file in a sitefs mount.") var file: String
    @Flag(help: "Print one JSON document.") var json = false

    func run() throws {
        let history = try VersionHistory(Self.read(file))
        if json {
            print(history.json())
        } else {
            for line in history.table(HumanText()) { print(line) }
        }
    }

    /// The file's versions, or a `UserFacingError` saying why there are none to show.
    static func read(_ file: String) throws -> [StoredVersion] {
        switch ControlAttributes.read("user.sitefs.control.versions", of: file) {
        case .success(let bytes):
            let answer = try ControlAttributes.decode(VersionsAnswer.self, bytes)
            if let error = answer.error { throw UserFacingError("\(TerminalText.escaped(file)): \(TerminalText.escaped(error))") }
            return answer.versions
        case .failure(let failure):
            throw UserFacingError(ControlAttributes.explain(failure, path: file, feature: "versions"))
        }
    }
}

/// `sitefs restore FILE VERSION`: makes that version's content the file's newest version on
/// the server (the current content stays a version). VERSION is a short id, a full id, or
/// `-N`, N versions back.
struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make an older version of a file its newest version (nothing is lost: the current one stays a version).",
        usage: "sitefs restore <file> <version>",
        discussion: """
            VERSION is a short id from `sitefs versions FILE` (or the first 4 or more of its digits), a full \
            version id, or -N: N versions back (-1 is the version before the current one).
            """)

    @Argument(help: "A file in a sitefs mount.") var file: String
    // Unrecognized: `-1` is a version here, not an option.
    @Argument(parsing: .allUnrecognized, help: "The version: a short id, a full id, or -N.") var version: [String] = []

    func validate() throws {
        guard version.count == 1 else { throw ValidationError("give one VERSION (a short id, a full id, or -N)") }
    }

    func run() throws {
        let history = VersionHistory(try Versions.read(file))
        let index: Int
        do {
            index = try history.resolve(version[0])
        } catch {
            throw UserFacingError(error.description)
        }
        let chosen = history.versions[index]
        if let failure = ControlAttributes.write("user.sitefs.control.restore", of: file, Array(chosen.id.utf8)) {
            throw UserFacingError("cannot restore \(TerminalText.escaped(file)): " + RestoreRefusal.reason(errno: failure.code))
        }
        print(history.restoredMessage(file: file, index: index, HumanText()))
    }
}
