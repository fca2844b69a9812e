import ArgumentParser
import Foundation
import SitefsCommandLine
import SitefsCore

/// `sitefs evict PATH...`: "Free up space". The local copies of files whose content is on
/// the server are removed (they are online-only again); a file with a save not yet on the
/// server, a file only here and a file open in a program are kept, and said why.
struct Evict: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Free up space: remove the local copies of files (and of everything in folders) whose content is on the server.",
        discussion: """
            Nothing the server does not have is removed: files with a save not yet uploaded, files only on this device and \
            files open in a program are kept, and listed with the reason. A pinned item (or a pin inside a folder) is unpinned \
            first; an item kept by a pinned folder above it is refused: free up space there, or unpin it.
            """)

    @Argument(help: "Files or folders in a sitefs mount.") var paths: [String]

    func run() throws {
        var failures: [String] = []
        for path in paths {
            do {
                let answer = try PinControl.ask("user.sitefs.control.evict", of: path, as: EvictAnswer.self)
                if let error = answer.error {
                    failures.append("\(TerminalText.escaped(path)): \(TerminalText.escaped(error))")
                    continue
                }
                print(Self.summary(of: answer))
            } catch {
                failures.append("\(TerminalText.escaped(path)): \(error)")
            }
        }
        guard failures.isEmpty else { throw UserFacingError(failures.joined(separator: "\n")) }
    }

    /// "freed 12.0 MiB (3 files) in Site/Forms", then what was unpinned and what was kept.
    static func summary(of answer: EvictAnswer) -> String {
        let files = answer.freedFiles == 1 ? "1 file" : "\(answer.freedFiles) files"
        var lines = ["freed \(ByteSize.format(answer.freedBytes)) (\(files)) in \(TerminalText.escaped(answer.path))"]
        if !answer.unpinned.isEmpty {
            lines.append("  unpinned first: \(answer.unpinned.map(TerminalText.escaped).joined(separator: ", "))")
        }
        if answer.keptCount > 0 {
            lines.append("  kept \(answer.keptCount == 1 ? "1 file" : "\(answer.keptCount) files"):")
            lines += answer.kept.map { "    \(TerminalText.escaped($0.path)): \(TerminalText.escaped($0.reason))" }
            if answer.keptCount > answer.kept.count { lines.append("    and \(answer.keptCount - answer.kept.count) more") }
        }
        return lines.joined(separator: "\n")
    }
}
