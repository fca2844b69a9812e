import SitefsAPI
import SitefsProvider

/// rclone's convention for symbolic links on a store without them (`rclone --links`): a link
/// `NAME` is the file `NAME.rclonelink` whose whole content is the target's bytes. sitefs
/// reads and writes the same files, so a tree one of them wrote reads the same in the other.
///
/// The identity table and every request use the file's name on the server (with the
/// suffix); only what the mount is shown (`ProviderItem.name`) and what it asks for (a new
/// link's or a rename's name) are without it. This type is that mapping, both ways.
enum RcloneLinks {
    /// The suffix (11 bytes, dot included) that marks a link's file.
    static let suffix = ".rclonelink"

    /// The longest link name: with the suffix it must still fit a name on the server.
    static let maximumNameBytes = ItemName.maximumBytes - suffix.utf8.count

    /// The link a file of the server stands for: `NAME` for `NAME.rclonelink` whose content
    /// (`size`) can be a target (1...4095 bytes), when `NAME` is itself a usable name; nil
    /// for anything else, which is shown as the plain file it is (an empty or oversized
    /// `.rclonelink` file is not a link anyone could have made).
    static func linkName(ofFile name: String, size: Int64?) -> String? {
        guard let size, (1...Int64(ProviderItem.maximumSymlinkTarget)).contains(size) else { return nil }
        return linkName(ofFile: name)
    }

    /// `NAME` for a file name `NAME.rclonelink` with a usable `NAME`, whatever its size.
    static func linkName(ofFile name: String) -> String? {
        let bytes = Array(name.utf8)
        let tail = Array(suffix.utf8)
        guard bytes.count > tail.count, bytes.suffix(tail.count).elementsEqual(tail) else { return nil }
        let stem = String(decoding: bytes.dropLast(tail.count), as: UTF8.self)
        guard Array(stem.utf8) == Array(bytes.dropLast(tail.count)), ItemName.violation(of: stem) == nil else { return nil }
        return stem
    }

    /// The server's file name for the link `name`: `.invalidName` when `name` is not a
    /// usable name, or is one but too long to carry the suffix (what ENAMETOOLONG means).
    static func fileName(ofLink name: String) throws(ProviderError) -> String {
        if let violation = ItemName.violation(of: name) { throw .invalidName(violation.description) }
        guard name.utf8.count <= maximumNameBytes else {
            throw .invalidName("a symbolic link's name is at most \(maximumNameBytes) bytes here "
                               + "(it is kept as NAME\(suffix), at most \(ItemName.maximumBytes)): \(name.utf8.count)")
        }
        return name + suffix
    }

    /// Whether a plain file may be called `name`: not a link's file name, which
    /// the next listing would show as a link (`.invalidName`).
    static func checkPlainName(_ name: String) throws(ProviderError) {
        guard linkName(ofFile: name) == nil else {
            throw .invalidName("names ending in \(suffix) are symbolic links on this mount (rclone's convention)")
        }
    }
}
