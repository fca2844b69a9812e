/// The text of an OpenDocument file (`.odt`, `.ods`, `.odp`, `.odg` and their templates):
/// `meta.xml`'s title, subject, description and keywords, then `content.xml`'s body, which
/// holds every paragraph, heading, list, table cell, frame and slide of all four kinds
/// (ODF 1.3 part 3, 3.1 and 5).
///
/// Text is read inside `text:p` and `text:h` only: everything a person typed is in one (a
/// spreadsheet cell's value as shown, a shape's or a slide's text too), and what lies between
/// them is the writer's whitespace or markup. Paragraphs, headings, list items, cells, rows,
/// frames and pages end with a line break; `text:s`, `text:tab` and `text:line-break` are
/// spaces (ODF collapses the whitespace of a paragraph's own characters, 6.1.2, as the
/// collector does). Deleted text kept for change tracking (`text:tracked-changes`) and the
/// numbers of footnote marks are not read.
enum OpenDocumentText {
    static let textNamespace = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
    static let tableNamespace = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
    static let drawingNamespace = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
    static let metaNamespace = "urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
    static let dublinCoreNamespace = "http://purl.org/dc/elements/1.1/"

    static let content = MarkupRules(
        text: .names(["p", "h"], in: [textNamespace]),
        breaks: Set<XMLName>.names(["p", "h", "list-item"], in: [textNamespace])
            .union(Set<XMLName>.names(["table-cell", "covered-table-cell", "table-row"], in: [tableNamespace]))
            .union(Set<XMLName>.names(["frame", "page"], in: [drawingNamespace])),
        spaces: .names(["s", "tab", "line-break", "soft-page-break"], in: [textNamespace]),
        skipped: .names(["tracked-changes", "note-citation"], in: [textNamespace])
    )

    static let meta: MarkupRules = {
        let fields = Set<XMLName>.names(["title", "subject", "description"], in: [dublinCoreNamespace])
            .union(Set<XMLName>.names(["keyword"], in: [metaNamespace]))
        return MarkupRules(text: fields, breaks: fields)
    }()

    static func read(_ archive: OfficeArchive) throws(ExtractionStop) {
        guard archive.contains("content.xml") else {
            throw .failed("an OpenDocument file without content.xml (encrypted, or not ODF)")
        }
        try archive.read("meta.xml", rules: meta)
        try archive.read("content.xml", rules: content)
    }
}
