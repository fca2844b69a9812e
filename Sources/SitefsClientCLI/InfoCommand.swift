import ArgumentParser
import CLinux
import Foundation
import SitefsCommandLine
import SitefsMountControl

/// `sitefs info PATH`: an item as the server knows it (state, ids, who made and changed it
/// and when, versions, its lock), from the daemon's `user.sitefs.*` attributes and `lstat`.
struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what the server knows of a file or folder: state, authors, times, versions, lock.")

    @Argument(help: "A file or folder in a sitefs mount.") var path: String
    @Flag(help: "Print one JSON document.") var json = false

    func run() throws {
        let absolute = ControlAttributes.absolute(path)
        var status = stat()
        guard lstat(path, &status) == 0 else {
            throw UserFacingError(ControlAttributes.explain(ControlAttributes.Errno(errno), path: path, feature: "info"))
        }
        var attributes: [String: String] = [:]
        for name in ItemInfo.attributeNames {
            switch ControlAttributes.read("user.sitefs." + name, of: path) {
            case .success(let bytes):
                attributes[name] = String(decoding: bytes, as: UTF8.self)
            case .failure(let failure) where failure.code == ENODATA:
                continue  // not kept for this item, or an older daemon
            case .failure(let failure):
                throw UserFacingError(ControlAttributes.explain(failure, path: path, feature: "info"))
            }
        }
        guard attributes["state"] != nil else {
            throw UserFacingError("\(TerminalText.escaped(path)) is not an item in a sitefs mount (a mount point itself has no item)")
        }
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFDIR: kind = "folder"
        case S_IFLNK: kind = "link"
        default: kind = "file"
        }
        let info = ItemInfo(path: absolute, kind: kind, size: Int64(status.st_size), attributes: attributes)
        if json {
            print(info.json())
        } else {
            for line in info.lines(HumanText()) { print(line) }
        }
    }
}
