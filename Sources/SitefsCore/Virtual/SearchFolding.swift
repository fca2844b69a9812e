import Foundation

/// Text as a search compares it: canonically decomposed, combining marks dropped, lower
/// case. So "Tür", "TÜR" and "tu\u{308}r" (NFD) all compare as "tur", and a name typed on a
/// Mac (NFD) is found by the same words as one typed here (NFC).
enum SearchFolding {
    static func fold(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.decomposedStringWithCanonicalMapping.unicodeScalars
        where scalar.properties.generalCategory != .nonspacingMark {
            scalars.append(scalar)
        }
        return String(scalars).lowercased()
    }

    /// The words of a query, folded; empty strings never.
    static func words(_ text: String) -> [String] {
        fold(text).split(whereSeparator: { $0.isWhitespace }).map(String.init)
    }
}
