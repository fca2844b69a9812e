/// Office Open XML word-processing documents (`.docx`), for people on Microsoft Word.
extension OfficeDocuments {
    /// A `.docx` with `title` in the Title style and one paragraph per string.
    public static func docx(title: String, paragraphs: [String]) -> [UInt8] {
        docx(title: title, blocks: blocks(from: paragraphs))
    }

    /// A `.docx` with `title` in the Title style (and as metadata title), then `blocks`.
    public static func docx(title: String, blocks: [Block]) -> [UInt8] {
        var zip = ZipArchiveWriter()
        zip.addFile(named: "[Content_Types].xml", text: WordprocessingParts.contentTypes)
        zip.addFile(named: "_rels/.rels", text: WordprocessingParts.packageRelationships)
        zip.addFile(named: "word/document.xml", text: WordprocessingParts.document(title: title, blocks: blocks))
        zip.addFile(named: "word/_rels/document.xml.rels", text: WordprocessingParts.documentRelationships)
        zip.addFile(named: "word/styles.xml", text: WordprocessingParts.styles)
        zip.addFile(named: "docProps/core.xml", text: OfficeOpenXMLParts.coreProperties(title: title))
        return zip.finish()
    }
}

/// The XML parts of a `.docx`.
enum WordprocessingParts {
    private static let mainNamespace = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

    static let contentTypes = XMLText.declaration + """
        <Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
         <Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
         <Default Extension="xml" ContentType="application/xml"/>
         <Override PartName="/word/document.xml" \
        ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
         <Override PartName="/word/styles.xml" \
        ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
         <Override PartName="/docProps/core.xml" \
        ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
        </Types>

        """

    static let packageRelationships = OfficeOpenXMLParts.relationships([
        ("rId1", OfficeOpenXMLParts.officeDocumentRelationship, "word/document.xml"),
        ("rId2", OfficeOpenXMLParts.corePropertiesRelationship, "docProps/core.xml"),
    ])

    static let documentRelationships = OfficeOpenXMLParts.relationships([
        ("rId1", "http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles", "styles.xml"),
    ])

    /// Title, Heading 2 and table text styles; the style IDs are the ones Word and
    /// LibreOffice map to their built-in styles.
    static let styles = XMLText.declaration + """
        <w:styles xmlns:w="\(mainNamespace)">
         <w:docDefaults>
          <w:rPrDefault><w:rPr><w:sz w:val="22"/><w:lang w:val="en-GB"/></w:rPr></w:rPrDefault>
          <w:pPrDefault><w:pPr><w:spacing w:after="120"/></w:pPr></w:pPrDefault>
         </w:docDefaults>
         <w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>
         <w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/>\
        <w:next w:val="Normal"/><w:qFormat/><w:pPr><w:spacing w:after="240"/><w:outlineLvl w:val="0"/></w:pPr>\
        <w:rPr><w:b/><w:sz w:val="36"/></w:rPr></w:style>
         <w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/>\
        <w:next w:val="Normal"/><w:qFormat/><w:pPr><w:keepNext/><w:spacing w:before="240" w:after="120"/>\
        <w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/><w:sz w:val="28"/></w:rPr></w:style>
        </w:styles>

        """

    /// A4 page with 2 cm margins, in twentieths of a point (twips).
    private static let pageWidth = 11906, pageHeight = 16838, margin = 1134

    static func document(title: String, blocks: [OfficeDocuments.Block]) -> String {
        var body = paragraph(title, style: "Title")
        for block in blocks {
            switch block {
            case .heading(let heading): body += paragraph(heading, style: "Heading2")
            case .paragraph(let text): body += paragraph(text, style: nil)
            case .table(let rows) where !rows.isEmpty: body += table(rows)
            case .table: continue  // nothing to show, and Word rejects a table without rows
            }
        }
        // Word insists a table is followed by a paragraph before the section properties.
        if case .table(let rows) = blocks.last, !rows.isEmpty {
            body += "  <w:p/>\n"
        }
        return XMLText.declaration + """
            <w:document xmlns:w="\(mainNamespace)">
             <w:body>
            \(body)  <w:sectPr><w:pgSz w:w="\(pageWidth)" w:h="\(pageHeight)"/><w:pgMar w:top="\(margin)" \
            w:right="\(margin)" w:bottom="\(margin)" w:left="\(margin)" w:header="709" w:footer="709" \
            w:gutter="0"/></w:sectPr>
             </w:body>
            </w:document>

            """
    }

    private static func paragraph(_ text: String, style: String?, bold: Bool = false) -> String {
        let properties = style.map { "<w:pPr><w:pStyle w:val=\"\($0)\"/></w:pPr>" } ?? ""
        return "  <w:p>\(properties)\(runs(text, bold: bold))</w:p>\n"
    }

    /// One run per line, with `<w:br/>` between lines: a raw newline in `w:t` would
    /// show as a space. `xml:space="preserve"` keeps leading and trailing spaces.
    private static func runs(_ text: String, bold: Bool) -> String {
        let runProperties = bold ? "<w:rPr><w:b/></w:rPr>" : ""
        return text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            .map { "<w:r>\(runProperties)<w:t xml:space=\"preserve\">\(XMLText.escape(String($0)))</w:t></w:r>" }
            .joined(separator: "<w:r><w:br/></w:r>")
    }

    private static func table(_ rows: [[String]]) -> String {
        let (grid, columns) = OfficeDocuments.rectangular(rows)
        let columnWidth = (pageWidth - 2 * margin) / columns
        let border = #"w:val="single" w:sz="4" w:space="0" w:color="000000""#
        var xml = "  <w:tbl><w:tblPr><w:tblW w:w=\"\(columnWidth * columns)\" w:type=\"dxa\"/><w:tblBorders>"
            + ["top", "left", "bottom", "right", "insideH", "insideV"].map { "<w:\($0) \(border)/>" }.joined()
            + "</w:tblBorders></w:tblPr>\n   <w:tblGrid>"
            + String(repeating: "<w:gridCol w:w=\"\(columnWidth)\"/>", count: columns) + "</w:tblGrid>\n"
        for (index, row) in grid.enumerated() {
            xml += "   <w:tr>"
            for cell in row {
                // Every cell needs at least one paragraph, even an empty one.
                xml += "<w:tc><w:tcPr><w:tcW w:w=\"\(columnWidth)\" w:type=\"dxa\"/></w:tcPr><w:p>"
                    + runs(cell, bold: index == 0) + "</w:p></w:tc>"
            }
            xml += "</w:tr>\n"
        }
        return xml + "  </w:tbl>\n"
    }
}
