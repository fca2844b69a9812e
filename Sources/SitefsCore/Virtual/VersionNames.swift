import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore

/// The names of a file's versions in its versions folder: when and by whom, in local time,
/// with the file's own extension (so a program opens one by its type):
///
///     2026-11-27 14.03.12 anna.odt
///     2026-11-28 09.15.40 ben (current).odt
///
/// Two versions stored in the same second are told apart by their id.
enum VersionNames {
    static func names(of versions: [ItemVersion], fileName: String) -> [String] {
        let suffix = fileExtension(of: fileName)
        var names: [String] = []
        var taken = Set<NameKey>()
        for (index, version) in versions.enumerated() {
            var stem = "\(localTime(version.modified)) \(author(version.modifiedBy))"
            if index == 0 { stem += " (current)" }
            var name = stem + suffix
            if taken.contains(NameKey(name)) { name = "\(stem) \(shortID(version.identifier))\(suffix)" }
            var counter = 2
            while taken.contains(NameKey(name)) {
                name = "\(stem) (\(counter))\(suffix)"
                counter += 1
            }
            taken.insert(NameKey(name))
            names.append(name)
        }
        return names
    }

    /// `YYYY-MM-DD HH.MM.SS` in the daemon's time zone (no colons: they trouble file
    /// managers and Windows shares).
    static func localTime(_ time: Timestamp) -> String {
        var seconds = time_t(time.microseconds / 1_000_000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return time.rfc3339 }
        return String(format: "%04d-%02d-%02d %02d.%02d.%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// An author as a part of a file name: no slash, no control characters, not too long.
    static func author(_ name: String?) -> String {
        guard let name, !name.isEmpty else { return "unknown" }
        var cleaned = String(name.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar.properties.generalCategory == .control ? "_" : Character(scalar)
        })
        if cleaned.count > 64 { cleaned = String(cleaned.prefix(64)) }
        return cleaned
    }

    /// The first characters of a version id, enough to tell versions of one second apart.
    static func shortID(_ identifier: String) -> String {
        String(identifier.filter { $0.isLetter || $0.isNumber }.prefix(8))
    }

    private static func fileExtension(of name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        let suffix = String(name[dot...])
        return suffix.utf8.count <= 16 && !suffix.contains("/") ? suffix : ""
    }
}
