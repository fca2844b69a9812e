import Foundation

/// How names, document text and query words are made comparable (the server's index and
/// the mount's search over the names it has listed alike): case-insensitive,
/// diacritic-insensitive, and the same for NFC and NFD input.
///
/// Folding is done here, in Swift, and never by a database: SQLite and PostgreSQL fold case,
/// accents and Unicode forms differently (and PostgreSQL's by the database's locale), so the
/// stores keep folded strings and compare them byte for byte. That is what makes a search give
/// the same results on both stores.
///
/// - `fold`: lowercase, canonical decomposition, combining marks dropped, a few letters that
///   have no decomposition mapped (ø → o, ß → ss...), then NFC again. Everything else is kept,
///   so a name's punctuation and spaces still match a query's.
/// - `tokens`: the folded text cut into runs of letters and digits (Unicode letters and
///   numbers), everything else a separator. Both full-text engines are handed these runs
///   joined by single spaces, so their own tokenizers have nothing left to decide.
public enum SearchFolding {
    /// Tokens longer than this (UTF-8 bytes) are not indexed: PostgreSQL drops lexemes past
    /// 2047 bytes where FTS5 keeps them, so both stores drop them earlier, alike.
    public static let maximumTokenBytes = 128

    /// The folded form of `text` (see the type's comment).
    public static func fold(_ text: String) -> String {
        // Fast path: ASCII needs only lowercasing (no marks, nothing to compose).
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        let decomposed = text.lowercased().decomposedStringWithCanonicalMapping
        var kept = String.UnicodeScalarView()
        for scalar in decomposed.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark:
                continue
            default:
                if let replacement = letterReplacements[scalar] {
                    kept.append(contentsOf: replacement.unicodeScalars)
                } else {
                    kept.append(scalar)
                }
            }
        }
        return String(kept).precomposedStringWithCanonicalMapping
    }

    /// Letters that fold to others without a canonical decomposition (after lowercasing).
    private static let letterReplacements: [Unicode.Scalar: String] = [
        "ø": "o", "ł": "l", "đ": "d", "ð": "d", "ħ": "h", "ı": "i", "ß": "ss", "æ": "ae", "œ": "oe", "þ": "th",
    ]

    /// Whether `scalar` belongs to a token: a letter or a decimal digit. Other numbers
    /// (superscripts, fractions, Roman numerals) separate tokens: PostgreSQL's parser does not
    /// take them as letters, and both engines must be handed the same words.
    public static func isTokenScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let value = scalar.value
            return (0x30...0x39).contains(value) || (0x61...0x7A).contains(value) || (0x41...0x5A).contains(value)
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
             .decimalNumber:
            return true
        default:
            return false
        }
    }

    /// The tokens of already folded text, in order (repeats kept), each at most
    /// `maximumTokenBytes` long (longer ones are left out).
    public static func tokens(ofFolded folded: String) -> [Substring] {
        var result: [Substring] = []
        var start: String.Index?
        let scalars = folded.unicodeScalars
        var index = scalars.startIndex
        while index != scalars.endIndex {
            let scalar = scalars[index]
            if isTokenScalar(scalar) {
                if start == nil { start = index }
            } else if let begin = start {
                append(folded[begin..<index], to: &result)
                start = nil
            }
            index = scalars.index(after: index)
        }
        if let begin = start { append(folded[begin...], to: &result) }
        return result
    }

    private static func append(_ token: Substring, to tokens: inout [Substring]) {
        if token.utf8.count <= maximumTokenBytes { tokens.append(token) }
    }

    /// What the full-text engines index for a document: its distinct tokens in order of first
    /// appearance, joined by single spaces, at most `limit` bytes (whole tokens). Repeats add
    /// nothing to a prefix match, and leaving them out keeps PostgreSQL's tsvector (at most
    /// 1 MB) well within bounds.
    public static func indexWords(of text: String, limit: Int = 256 << 10) -> (words: String, truncated: Bool) {
        var seen = Set<Substring>()
        var words = ""
        words.reserveCapacity(min(text.utf8.count, limit))
        for token in tokens(ofFolded: fold(text)) where seen.insert(token).inserted {
            let needed = token.utf8.count + (words.isEmpty ? 0 : 1)
            guard words.utf8.count + needed <= limit else { return (words, true) }
            if !words.isEmpty { words.append(" ") }
            words.append(contentsOf: token)
        }
        return (words, false)
    }

    /// A name's folded stem: the folded name without its last extension (".odt"), when it has
    /// one after a non-empty stem; else the folded name.
    public static func stem(ofFolded folded: String) -> String {
        guard let dot = folded.lastIndex(of: "."), dot != folded.startIndex else { return folded }
        return String(folded[..<dot])
    }
}
