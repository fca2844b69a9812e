/// Renders rows as CSV (RFC 4180): comma-separated, CRLF line ends, and fields quoted
/// only when they contain a comma, quote or line break, which is what LibreOffice's
/// and Excel's import dialogs expect by default.
enum CSVText {
    static func render(_ rows: [[String]]) -> String {
        rows.map { $0.map(field).joined(separator: ",") + "\r\n" }.joined()
    }

    private static func field(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return value }
        var quoted = "\""
        for character in value {
            quoted += character == "\"" ? "\"\"" : String(character)
        }
        return quoted + "\""
    }
}
