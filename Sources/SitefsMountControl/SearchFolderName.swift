import Foundation

/// The name of a search folder (`MOUNT/.search/NAME`), which the daemon reads back as a
/// query: the words as typed, then a token per filter, each after one space:
///
///     level 1 plan site:"Harbour Tower" type:pdf since:2026-11-01
///
/// - `site:"S"`: always quoted; inside the quotes `"` is written `\"` and `\` is `\\`.
/// - `type:T`: one file name extension, lowercase, without its dot, letters and digits
///   (`pdf`; `gz` for `.tar.gz`).
/// - `since:YYYY-MM-DD`: a calendar date.
///
/// A name is a file name: at most 255 bytes, no `/`, no NUL, not `.` or `..`; words hold no
/// control characters (they would reach the daemon's log and the terminal). Anything else is
/// a `SearchNameError` saying what to change.
public struct SearchFolderName: Sendable, Equatable {
    public var words: String
    public var site: String?
    public var fileType: String?
    /// `YYYY-MM-DD`.
    public var since: String?

    /// Longest name a folder may have (NAME_MAX), in bytes.
    public static let maximumBytes = 255

    /// Checks and normalises the parts: the words' runs of spaces become one space and the
    /// ends are trimmed; the type loses a leading dot and is lowercased; the date must be a
    /// real one.
    public init(words: [String], site: String? = nil, fileType: String? = nil, since: String? = nil) throws(SearchNameError) {
        let joined = words.joined(separator: " ").split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
        guard !joined.isEmpty else { throw .noWords }
        if joined.contains("/") { throw .slash("the words") }
        if joined.unicodeScalars.contains(where: Self.isControl) { throw .controlCharacter("the words") }
        self.words = joined
        if let site {
            guard !site.isEmpty else { throw .emptySite }
            if site.contains("/") { throw .slash("the site") }
            if site.unicodeScalars.contains(where: Self.isControl) { throw .controlCharacter("the site") }
        }
        self.site = site
        if let fileType {
            var type = fileType.lowercased()
            if type.hasPrefix(".") { type.removeFirst() }
            guard !type.isEmpty, type.utf8.count <= 32, type.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) })
            else { throw .badType(fileType) }
            self.fileType = type
        } else {
            self.fileType = nil
        }
        if let since {
            guard Self.isCalendarDate(since) else { throw .badDate(since) }
        }
        self.since = since
        let name = self.name
        guard name != ".", name != ".." else { throw .dotName }
        guard name.utf8.count <= Self.maximumBytes else { throw .tooLong(bytes: name.utf8.count) }
    }

    /// The folder name.
    public var name: String {
        var name = words
        if let site { name += " site:" + Self.quoted(site) }
        if let fileType { name += " type:" + fileType }
        if let since { name += " since:" + since }
        return name
    }

    /// `"` + the value with `\` and `"` escaped + `"`.
    public static func quoted(_ value: String) -> String {
        var result = "\""
        for character in value {
            if character == "\\" || character == "\"" { result.append("\\") }
            result.append(character)
        }
        return result + "\""
    }

    /// `YYYY-MM-DD` naming a day that exists (1970 to 9999).
    public static func isCalendarDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }),
              let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1970...9999).contains(year), (1...12).contains(month), day >= 1
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= lengths[month - 1]
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// Why a search cannot be a folder name, in words for the person who typed it.
public enum SearchNameError: Error, Equatable, CustomStringConvertible {
    case noWords
    case slash(String)
    case controlCharacter(String)
    case emptySite
    case badType(String)
    case badDate(String)
    case dotName
    case tooLong(bytes: Int)

    public var description: String {
        switch self {
        case .noWords: return "give the words to search for"
        case .slash(let part): return "\(part) may not contain '/': a search is a folder name"
        case .controlCharacter(let part): return "\(part) may not contain control characters"
        case .emptySite: return "--site needs a site's name"
        case .badType(let type): return "--type takes a file name extension such as pdf or odt, not \(type.debugDescription)"
        case .badDate(let date): return "--since takes a date as YYYY-MM-DD (such as 2026-11-01), not \(date.debugDescription)"
        case .dotName: return "'.' and '..' are no search"
        case .tooLong(let bytes):
            return "the search is \(bytes) bytes as a folder name, and a folder name holds at most \(SearchFolderName.maximumBytes): use fewer or shorter words"
        }
    }
}
