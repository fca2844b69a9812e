import SitefsAPI

/// The few words of a document's text around the first word a search matched there, made
/// from the text as extracted (not the folded words the engines index), so the person reads
/// the document's own spelling.
enum SearchSnippet {
    /// Words shown before the match, and in all.
    static let wordsBefore = 8
    static let wordsInAll = 20
    /// A snippet longer than this (UTF-8 bytes; long "words" in a hostile text) is cut.
    static let maximumBytes = 400

    /// The snippet of `text` around the first word whose folded form starts with one of
    /// `prefixes` (folded tokens), or nil when no word does. One pass over the text, so it
    /// costs at most the text's length (`ExtractionLimits.maximumTextBytes`).
    static func make(from text: String, prefixes: [String]) -> String? {
        guard !prefixes.isEmpty else { return nil }
        // Before the match: the last `wordsBefore` words; from it on: up to `wordsInAll`.
        var kept: [Range<String.Index>] = []
        var droppedBefore = false
        var matched = false
        func take(_ range: Range<String.Index>) -> Bool {
            kept.append(range)
            if !matched {
                let folded = SearchFolding.fold(String(text[range]))
                if prefixes.contains(where: { folded.hasPrefixBytes($0) }) {
                    matched = true
                } else {
                    if kept.count > wordsBefore {
                        kept.removeFirst()
                        droppedBefore = true
                    }
                    return false
                }
            }
            return kept.count >= wordsInAll
        }
        let scalars = text.unicodeScalars
        var start: String.Index?
        var index = scalars.startIndex
        var done = false
        // Bounded by the text's length: each step moves one scalar on.
        while index != scalars.endIndex && !done {
            let scalar = scalars[index]
            if SearchFolding.isTokenScalar(scalar) || (start != nil && isMark(scalar)) {
                if start == nil { start = index }
            } else if let begin = start {
                done = take(begin..<index)
                start = nil
            }
            index = scalars.index(after: index)
        }
        if !done, let begin = start { _ = take(begin..<scalars.endIndex) }
        guard matched, let first = kept.first, let last = kept.last else { return nil }
        // Words follow the last one kept: an ellipsis; else the text's end, punctuation and all.
        let more = text.unicodeScalars[last.upperBound...].contains(where: SearchFolding.isTokenScalar)
        let from = droppedBefore ? first.lowerBound : text.startIndex
        let to = more ? last.upperBound : text.endIndex
        var snippet = text[from..<to].split(whereSeparator: { $0.isWhitespace || $0.isNewline }).joined(separator: " ")
        if snippet.utf8.count > maximumBytes {
            // Characters of up to 4 bytes: this many always fit.
            snippet = String(snippet.prefix(maximumBytes / 4))
        }
        return (droppedBefore ? "… " : "") + snippet + (more ? " …" : "")
    }

    private static func isMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }
}

extension String {
    /// Whether this string's UTF-8 starts with `prefix`'s (no Unicode equivalence: both are
    /// folded already, and the engines compare bytes too).
    func hasPrefixBytes(_ prefix: String) -> Bool {
        utf8.starts(with: prefix.utf8)
    }

    /// Whether `other`'s UTF-8 occurs in this string's, as the engines' substring tests
    /// (`instr`, `strpos`) find it.
    func containsBytes(_ other: String) -> Bool {
        let needle = Array(other.utf8)
        guard !needle.isEmpty else { return true }
        let haystack = Array(utf8)
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
