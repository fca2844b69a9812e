/// Escaping for text that goes into the XML parts of office documents.
///
/// Every document generator builds XML by string concatenation, so all caller text
/// passes through here; one unescaped `&` in a site name would make LibreOffice
/// reject the whole file as corrupt.
enum XMLText {
    /// The declaration every part starts with; all parts are written as UTF-8.
    static let declaration = #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"# + "\n"

    /// Escapes `text` for use in element content and in double- or single-quoted
    /// attribute values. Characters XML 1.0 cannot carry at all (most C0 controls,
    /// U+FFFE, U+FFFF) become U+FFFD, since no escape would make them well-formed.
    static func escape(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                result += "\u{FFFD}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
