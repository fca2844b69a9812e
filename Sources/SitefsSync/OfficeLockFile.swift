import Foundation
import SitefsAPI
import SitefsProvider

/// LibreOffice's lock file: `.~lock.NAME#` beside the document NAME, created (exclusively)
/// when LibreOffice opens NAME for editing and removed when it closes it. A LibreOffice that
/// finds one it did not write opens the document read-only and names the holder ("Document
/// in use, locked for editing by ...").
///
/// Its content is one record: `USER NAME,SYSTEM USER,HOST,DD.MM.YYYY HH:MM,USER URL;`, each
/// field with `,` `;` and `\` escaped by a backslash (what LibreOffice 7 writes and reads).
/// LibreOffice treats a lock whose system user, host and user URL are its own as its own:
/// the record made here names the holder's account and device and a `sitefs:` URL, which
/// no LibreOffice profile has.
public enum OfficeLockFile {
    static let prefix = ".~lock."
    static let suffix = "#"

    /// The document a lock-file name stands for; nil for any other name.
    public static func document(of lockFileName: String) -> String? {
        guard lockFileName.hasPrefix(prefix), lockFileName.hasSuffix(suffix),
              lockFileName.utf8.count > prefix.utf8.count + suffix.utf8.count else { return nil }
        return String(lockFileName.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// The lock file's name for `document`; nil when it would be longer than a name may be
    /// (255 bytes): LibreOffice then keeps no lock file either.
    public static func name(for document: String) -> String? {
        let name = prefix + document + suffix
        return name.utf8.count <= 255 ? name : nil
    }

    /// The record LibreOffice reads from the lock file of a document `lock` holds. The time
    /// is the holder's `since` in this machine's time zone, as LibreOffice shows its own.
    public static func content(for lock: ProviderLock, timeZone: TimeZone = .current) -> [UInt8] {
        let fields = [lock.holderName, lock.holder, lock.device.isEmpty ? "sitefs" : lock.device,
                      editTime(lock.since, timeZone: timeZone), "sitefs:" + lock.device]
        return Array((fields.map(escape).joined(separator: ",") + ";").utf8)
    }

    static func escape(_ field: String) -> String {
        var escaped = ""
        for character in field {
            if character == "," || character == ";" || character == "\\" { escaped.append("\\") }
            // A record is one line: control characters from a server have no place in it.
            escaped.append(character.isNewline || character.unicodeScalars.contains(where: { $0.value < 0x20 }) ? " " : character)
        }
        return escaped
    }

    static func editTime(_ time: Timestamp, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let date = Date(timeIntervalSince1970: Double(time.microseconds) / 1_000_000)
        let parts = calendar.dateComponents([.day, .month, .year, .hour, .minute], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(two(parts.day)).\(two(parts.month)).\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute))"
    }
}
