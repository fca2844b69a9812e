/// The text of an Office Open XML file (ECMA-376): Word, Excel and PowerPoint documents and
/// their templates and macro-enabled variants. Each kind keeps its text in parts of known
/// names, read in the order a reader meets them:
///
/// - Word (`.docx`): `word/document.xml`, then headers, footers, footnotes and endnotes. Text
///   is in `w:t`; `w:p` (paragraph), `w:tc` and `w:tr` (table cell and row) end lines;
///   `w:tab`, `w:br` and `w:cr` are spaces. Deleted runs (`w:delText`) and field codes
///   (`w:instrText`) are not `w:t`, so they are not read.
/// - Excel (`.xlsx`): `xl/sharedStrings.xml`, where nearly all of a workbook's text is (each
///   `si` a line, phonetic guides `rPh` left out), then the inline strings (`is`) of
///   `xl/worksheets/sheet*.xml`. Numbers and formulas are not text for search.
/// - PowerPoint (`.pptx`): `ppt/slides/slide*.xml` in slide-number order (`slide2` before
///   `slide10`), `a:t` in `a:p` paragraphs.
///
/// Every kind starts with the title, subject, description and keywords of
/// `docProps/core.xml` (Open Packaging Conventions, ECMA-376 part 2, 11).
///
/// Markup compatibility's `mc:Fallback` (a copy of content for older readers, beside the
/// `mc:Choice` that holds it) is skipped, so text boxes are not read twice. Both the
/// transitional and the strict namespaces are read.
enum OfficeOpenXMLText {
    enum Kind: Sendable {
        case word, workbook, presentation
    }

    static let wordNamespaces = [
        "http://schemas.openxmlformats.org/wordprocessingml/2006/main", "http://purl.oclc.org/ooxml/wordprocessingml/main",
    ]
    static let sheetNamespaces = [
        "http://schemas.openxmlformats.org/spreadsheetml/2006/main", "http://purl.oclc.org/ooxml/spreadsheetml/main",
    ]
    static let drawingNamespaces = [
        "http://schemas.openxmlformats.org/drawingml/2006/main", "http://purl.oclc.org/ooxml/drawingml/main",
    ]
    static let fallback = Set<XMLName>.names(["Fallback"], in: ["http://schemas.openxmlformats.org/markup-compatibility/2006"])

    static let core: MarkupRules = {
        let fields = Set<XMLName>.names(["title", "subject", "description"], in: ["http://purl.org/dc/elements/1.1/"])
            .union(Set<XMLName>.names(["keywords"], in: ["http://schemas.openxmlformats.org/package/2006/metadata/core-properties"]))
        return MarkupRules(text: fields, breaks: fields)
    }()

    static let word = MarkupRules(
        text: .names(["t"], in: wordNamespaces),
        breaks: .names(["p", "tc", "tr"], in: wordNamespaces),
        spaces: .names(["tab", "br", "cr"], in: wordNamespaces),
        skipped: fallback
    )

    /// Shared strings and worksheets alike: `t` is only ever in a string (`si` in the one,
    /// an inline `is` in the other).
    static let sheet = MarkupRules(
        text: .names(["t"], in: sheetNamespaces),
        breaks: .names(["si", "is"], in: sheetNamespaces),
        skipped: Set<XMLName>.names(["rPh"], in: sheetNamespaces).union(fallback)
    )

    static let slide = MarkupRules(
        text: .names(["t"], in: drawingNamespaces),
        breaks: .names(["p", "tc"], in: drawingNamespaces),
        spaces: .names(["br"], in: drawingNamespaces),
        skipped: fallback
    )

    static func read(_ archive: OfficeArchive, kind: Kind) throws(ExtractionStop) {
        let main = switch kind {
        case .word: "word/document.xml"
        case .workbook: "xl/workbook.xml"
        case .presentation: "ppt/presentation.xml"
        }
        guard archive.contains(main) else { throw .failed("an Office Open XML file without \(main)") }
        try archive.read("docProps/core.xml", rules: core)
        switch kind {
        case .word:
            try archive.read("word/document.xml", rules: word)
            for prefix in ["word/header", "word/footer"] {
                for path in numbered(archive, prefix: prefix) { try archive.read(path, rules: word) }
            }
            for path in ["word/footnotes.xml", "word/endnotes.xml"] { try archive.read(path, rules: word) }
        case .workbook:
            try archive.read("xl/sharedStrings.xml", rules: sheet)
            for path in numbered(archive, prefix: "xl/worksheets/sheet") { try archive.read(path, rules: sheet) }
        case .presentation:
            for path in numbered(archive, prefix: "ppt/slides/slide") { try archive.read(path, rules: slide) }
        }
    }

    /// The parts named PREFIX + a number + `.xml`, by that number (then by name, for equal
    /// numbers written with leading zeros).
    static func numbered(_ archive: OfficeArchive, prefix: String) -> [String] {
        let parts = archive.paths { path in
            guard path.hasPrefix(prefix), path.hasSuffix(".xml") else { return false }
            let digits = path.dropFirst(prefix.count).dropLast(4)
            return !digits.isEmpty && digits.count <= 9 && digits.allSatisfy { $0.isASCII && $0.isNumber }
        }
        func number(_ path: String) -> Int { Int(path.dropFirst(prefix.count).dropLast(4)) ?? 0 }
        return parts.sorted { (number($0), $0) < (number($1), $1) }
    }
}
