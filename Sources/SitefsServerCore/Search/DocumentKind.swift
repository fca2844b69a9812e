import Foundation

/// Which reader a document's text needs, from its name's extension (what the user and every
/// program go by), checked against its first bytes before any reader opens it: a name that
/// says office document or PDF over other content fails cleanly instead of reaching a parser
/// that expects the format.
enum DocumentKind: Equatable, Sendable {
    case plainText
    case openDocument
    case officeOpenXML(OfficeOpenXMLText.Kind)
    case pdf

    /// Extensions read as UTF-8 text. Markup whose text is tags (HTML, XML, SVG) is not here:
    /// indexed raw, its element names would match every search.
    static let plainTextExtensions: Set<String> = [
        "txt", "text", "md", "markdown", "rst", "adoc", "org", "tex", "csv", "tsv", "json", "yaml", "yml",
        "toml", "ini", "conf", "cfg", "log", "srt", "vtt",
    ]
    /// Text, spreadsheet, presentation and drawing documents and their templates.
    static let openDocumentExtensions: Set<String> = ["odt", "ods", "odp", "odg", "ott", "ots", "otp", "otg"]
    static let officeOpenXMLExtensions: [String: OfficeOpenXMLText.Kind] = [
        "docx": .word, "docm": .word, "dotx": .word, "dotm": .word,
        "xlsx": .workbook, "xlsm": .workbook, "xltx": .workbook, "xltm": .workbook,
        "pptx": .presentation, "pptm": .presentation, "potx": .presentation, "potm": .presentation, "ppsx": .presentation,
        "ppsm": .presentation,
    ]

    /// The kind the name's extension says, or nil for a type whose text is not read.
    init?(name: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let suffix = name[name.index(after: dot)...].lowercased()
        if Self.plainTextExtensions.contains(suffix) {
            self = .plainText
        } else if Self.openDocumentExtensions.contains(suffix) {
            self = .openDocument
        } else if let kind = Self.officeOpenXMLExtensions[suffix] {
            self = .officeOpenXML(kind)
        } else if suffix == "pdf" {
            self = .pdf
        } else {
            return nil
        }
    }

    /// How far into a PDF its header may come: ISO 32000-2 7.5.2 has it first, but readers
    /// (and so writers) accept it within the first kilobyte.
    static let pdfHeaderWindow = 1024

    /// Nil when `head` (the file's first bytes, up to `pdfHeaderWindow`) fits the kind; else
    /// why not. Plain text is checked as it is read (no NUL byte).
    func mismatch(head: [UInt8]) -> String? {
        switch self {
        case .plainText:
            return nil
        case .openDocument, .officeOpenXML:
            // A zip starts with a local file header: "PK\3\4".
            return head.starts(with: [0x50, 0x4B, 0x03, 0x04]) ? nil : "the name says office document, but it is not a zip file"
        case .pdf:
            let marker = Array("%PDF-".utf8)
            guard head.count >= marker.count else { return "the name says PDF, but it has no %PDF- header" }
            let found = (0...(head.count - marker.count)).contains { head[$0..<$0 + marker.count].elementsEqual(marker) }
            return found ? nil : "the name says PDF, but it has no %PDF- header"
        }
    }
}
