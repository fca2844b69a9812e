import ArgumentParser
import CLinux
import Foundation
import SitefsCommandLine
import SitefsCore

/// `sitefs pin PATH...`: keep files and folders on this device (downloaded in the background,
/// kept current, never cleaned up, readable and editable offline).
struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep files and folders on this device: downloaded in the background, kept current, usable offline.",
        discussion: """
            A pinned folder covers what is added under it later. Pins survive remounts. \
            `sitefs status MOUNTPOINT` shows their progress; `sitefs sync --pinned MOUNTPOINT` waits until all is local. \
            The same as `setfattr -n user.sitefs.pinned -v 1 PATH` on items you may write.
            """)

    @Argument(help: "Files or folders in a sitefs mount.") var paths: [String]

    func run() throws {
        try PinControl.apply("user.sitefs.control.pin", to: paths) { answer in
            print("pinned \(TerminalText.escaped(answer.path))")
        }
    }
}

/// `sitefs unpin PATH...`: back to online-only once nothing holds the local copies.
struct Unpin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop keeping files and folders on this device (their local copies are removed once unused and uploaded).")

    @Argument(help: "Files or folders in a sitefs mount.") var paths: [String]

    func run() throws {
        try PinControl.apply("user.sitefs.control.unpin", to: paths) { answer in
            if answer.pinned {
                print("unpinned \(TerminalText.escaped(answer.path)); a pinned folder above it still keeps it")
            } else {
                print("unpinned \(TerminalText.escaped(answer.path))")
            }
        }
    }
}

/// Pins and unpins go to the daemon as a read of a control attribute on the item itself:
/// reading needs only read access, so read-only items can be pinned too (the kernel lets a
/// user set an attribute only on what they may write). The daemon answers a `PinAnswer`.
enum PinControl {
    static func apply(_ control: String, to paths: [String], report: (PinAnswer) -> Void) throws {
        var failures: [String] = []
        for path in paths {
            do {
                let answer = try ask(control, of: path, as: PinAnswer.self)
                if let error = answer.error {
                    failures.append("\(TerminalText.escaped(path)): \(TerminalText.escaped(error))")
                } else {
                    report(answer)
                }
            } catch {
                failures.append("\(TerminalText.escaped(path)): \(error)")
            }
        }
        guard failures.isEmpty else { throw UserFacingError(failures.joined(separator: "\n")) }
    }

    /// Reads the control attribute `control` of `path` and decodes the daemon's answer.
    static func ask<Answer: Decodable>(_ control: String, of path: String, as: Answer.Type) throws -> Answer {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let count = getxattr(path, control, &buffer, buffer.count)
        guard count >= 0 else {
            switch errno {
            case ENODATA, ENOTSUP: throw UserFacingError("not in a sitefs mount (or its daemon predates pins)")
            case ENOTCONN: throw UserFacingError("the sitefs daemon of this mount is gone; run `sitefs unmount`")
            case ENOENT: throw UserFacingError("no such file or folder")
            case EACCES, EPERM: throw UserFacingError("permission denied (only the user who mounted it, or root, may)")
            default: throw UserFacingError(String(cString: strerror(errno)))
            }
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: Data(buffer[0..<count]))
        } catch {
            throw UserFacingError("the daemon's answer is not understood: \(error)")
        }
    }
}
