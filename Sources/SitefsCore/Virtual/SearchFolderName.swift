import Foundation
import SitefsAPI

/// A search folder's name, `MOUNT/.search/NAME`: the words to find, then filters as
/// `key:value` tokens, a value with spaces in double quotes (`\"` for a quote inside):
///
///     fire door site:"Harbour Works" type:pdf since:2026-11-01
///
/// `site:` is a site's name as the mount root lists it, `type:` a file extension, `since:` a
/// day (local midnight) or an RFC 3339 time. `sitefs search` writes these names; a person can
/// type one in a file manager's location bar.
struct SearchFolderName: Equatable {
    var words: String
    var siteName: String?
    var fileExtension: String?
    var modifiedSince: Timestamp?

    struct Problem: Error, Equatable {
        var message: String
    }

    /// At most this many words are searched: more is refused, not cut.
    static let maximumWords = 8

    init(parsing name: String) throws(Problem) {
        var words: [String] = []
        var siteName: String?
        var fileExtension: String?
        var modifiedSince: Timestamp?
        for token in try Self.tokens(of: name) {
            switch token {
            case .word(let word):
                words.append(word)
            case .filter("site", let value):
                guard !value.isEmpty else { throw Problem(message: "site: needs a site's name") }
                siteName = value
            case .filter("type", let value):
                let trimmed = value.hasPrefix(".") ? String(value.dropFirst()) : value
                guard !trimmed.isEmpty, !trimmed.contains(".") else { throw Problem(message: "type: takes an extension such as pdf") }
                fileExtension = trimmed.lowercased()
            case .filter("since", let value):
                guard let time = Self.time(value) else {
                    throw Problem(message: "since: takes a day (2026-11-01) or an RFC 3339 time, not \(value.debugDescription)")
                }
                modifiedSince = time
            case .filter(let key, let value):
                // Not a filter this mount knows: searched as the word it is.
                words.append("\(key):\(value)")
            }
        }
        guard !words.isEmpty else { throw Problem(message: "no words to search for") }
        guard words.count <= Self.maximumWords else {
            throw Problem(message: "at most \(Self.maximumWords) words are searched; this has \(words.count)")
        }
        self.words = words.joined(separator: " ")
        self.siteName = siteName
        self.fileExtension = fileExtension
        self.modifiedSince = modifiedSince
    }

    private enum Token: Equatable {
        case word(String)
        case filter(String, String)
    }

    private static let filterKeys: Set<String> = ["site", "type", "since"]

    private static func tokens(of name: String) throws(Problem) -> [Token] {
        var tokens: [Token] = []
        var index = name.startIndex
        while index < name.endIndex {
            if name[index].isWhitespace {
                index = name.index(after: index)
                continue
            }
            let start = index
            while index < name.endIndex, !name[index].isWhitespace, name[index] != ":" { index = name.index(after: index) }
            let head = String(name[start..<index])
            guard index < name.endIndex, name[index] == ":", filterKeys.contains(head.lowercased()) else {
                // A plain word (up to the next space, a colon included).
                while index < name.endIndex, !name[index].isWhitespace { index = name.index(after: index) }
                tokens.append(.word(String(name[start..<index])))
                continue
            }
            index = name.index(after: index)  // the colon
            var value = ""
            if index < name.endIndex, name[index] == "\"" {
                index = name.index(after: index)
                var closed = false
                while index < name.endIndex {
                    let character = name[index]
                    index = name.index(after: index)
                    if character == "\\", index < name.endIndex {
                        value.append(name[index])
                        index = name.index(after: index)
                    } else if character == "\"" {
                        closed = true
                        break
                    } else {
                        value.append(character)
                    }
                }
                guard closed else { throw Problem(message: "\(head): has an opening quote and no closing one") }
            } else {
                while index < name.endIndex, !name[index].isWhitespace {
                    value.append(name[index])
                    index = name.index(after: index)
                }
            }
            tokens.append(.filter(head.lowercased(), value))
        }
        return tokens
    }

    /// A day is its local midnight; anything else must be a full RFC 3339 time.
    private static func time(_ text: String) -> Timestamp? {
        if let exact = Timestamp(rfc3339: text) { return exact }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 3, let year = parts[0], let month = parts[1], let day = parts[2],
              (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
              calendar.component(.day, from: date) == day else { return nil }
        return Timestamp(secondsSinceEpoch: date.timeIntervalSince1970)
    }
}
