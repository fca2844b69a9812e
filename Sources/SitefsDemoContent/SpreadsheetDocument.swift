/// Office Open XML spreadsheets (`.xlsx`), the exchange format for lists and schedules.
extension OfficeDocuments {
    /// A one-sheet `.xlsx`. Text cells are inline strings (no shared-string table to keep
    /// in step), numbers are numeric cells. With `boldFirstRow` the first row is set in
    /// bold as a header. The sheet name is made legal for spreadsheet applications:
    /// `[]:*?/\` become `-`, and it is cut to 31 characters.
    public static func xlsx(sheetName: String, rows: [[Cell]], boldFirstRow: Bool = true) -> [UInt8] {
        var zip = ZipArchiveWriter()
        zip.addFile(named: "[Content_Types].xml", text: SpreadsheetParts.contentTypes)
        zip.addFile(named: "_rels/.rels", text: SpreadsheetParts.packageRelationships)
        zip.addFile(named: "xl/workbook.xml", text: SpreadsheetParts.workbook(sheetName: sheetName))
        zip.addFile(named: "xl/_rels/workbook.xml.rels", text: SpreadsheetParts.workbookRelationships)
        zip.addFile(named: "xl/styles.xml", text: SpreadsheetParts.styles)
        zip.addFile(named: "xl/worksheets/sheet1.xml",
                    text: SpreadsheetParts.worksheet(rows: rows, boldFirstRow: boldFirstRow))
        zip.addFile(named: "docProps/core.xml", text: OfficeOpenXMLParts.coreProperties(title: sheetName))
        return zip.finish()
    }
}

/// The XML parts of an `.xlsx`.
enum SpreadsheetParts {
    private static let mainNamespace = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    private static let relationshipNamespace =
        "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

    static let contentTypes = XMLText.declaration + """
        <Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
         <Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
         <Default Extension="xml" ContentType="application/xml"/>
         <Override PartName="/xl/workbook.xml" \
        ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>
         <Override PartName="/xl/worksheets/sheet1.xml" \
        ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>
         <Override PartName="/xl/styles.xml" \
        ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>
         <Override PartName="/docProps/core.xml" \
        ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
        </Types>

        """

    static let packageRelationships = OfficeOpenXMLParts.relationships([
        ("rId1", OfficeOpenXMLParts.officeDocumentRelationship, "xl/workbook.xml"),
        ("rId2", OfficeOpenXMLParts.corePropertiesRelationship, "docProps/core.xml"),
    ])

    static let workbookRelationships = OfficeOpenXMLParts.relationships([
        ("rId1", "\(relationshipNamespace)/worksheet", "worksheets/sheet1.xml"),
        ("rId2", "\(relationshipNamespace)/styles", "styles.xml"),
    ])

    static func workbook(sheetName: String) -> String {
        XMLText.declaration + """
            <workbook xmlns="\(mainNamespace)" xmlns:r="\(relationshipNamespace)">
             <sheets><sheet name="\(XMLText.escape(legalSheetName(sheetName)))" sheetId="1" r:id="rId1"/></sheets>
            </workbook>

            """
    }

    /// Cell format 0 is plain, 1 is bold (header row). Fills 0 and 1 are the two
    /// reserved fills every styles part must start with.
    static let styles = XMLText.declaration + """
        <styleSheet xmlns="\(mainNamespace)">
         <fonts count="2"><font><sz val="11"/><name val="Calibri"/></font>\
        <font><b/><sz val="11"/><name val="Calibri"/></font></fonts>
         <fills count="2"><fill><patternFill patternType="none"/></fill>\
        <fill><patternFill patternType="gray125"/></fill></fills>
         <borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
         <cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
         <cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>\
        <xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>
         <cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>
        </styleSheet>

        """

    /// Printed (and exported to PDF) landscape on A4, scaled to one page wide, because
    /// lists and schedules are wide and a column split across pages is unreadable.
    static func worksheet(rows: [[OfficeDocuments.Cell]], boldFirstRow: Bool) -> String {
        var sheetData = ""
        for (rowIndex, row) in rows.enumerated() {
            let rowNumber = rowIndex + 1
            let style = boldFirstRow && rowIndex == 0 ? " s=\"1\"" : ""
            sheetData += "  <row r=\"\(rowNumber)\">"
            for (columnIndex, cell) in row.enumerated() {
                let reference = columnName(columnIndex) + String(rowNumber)
                sheetData += self.cell(cell, reference: reference, style: style)
            }
            sheetData += "</row>\n"
        }
        return XMLText.declaration + """
            <worksheet xmlns="\(mainNamespace)">
             <sheetPr><pageSetUpPr fitToPage="1"/></sheetPr>
            \(columnWidths(rows)) <sheetData>
            \(sheetData) </sheetData>
             <pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/>
             <pageSetup paperSize="9" orientation="landscape" fitToWidth="1" fitToHeight="0"/>
            </worksheet>

            """
    }

    private static func cell(_ cell: OfficeDocuments.Cell, reference: String, style: String) -> String {
        switch cell {
        case .number(let value) where value.isFinite:
            return "<c r=\"\(reference)\"\(style)><v>\(numberText(value))</v></c>"
        case .number(let value):
            // SpreadsheetML has no literal for NaN or infinity; show the value as text.
            return inlineString(String(describing: value), reference: reference, style: style)
        case .text(let text):
            return inlineString(text, reference: reference, style: style)
        }
    }

    private static func inlineString(_ text: String, reference: String, style: String) -> String {
        "<c r=\"\(reference)\"\(style) t=\"inlineStr\"><is><t xml:space=\"preserve\">"
            + XMLText.escape(text) + "</t></is></c>"
    }

    /// Whole numbers without a fraction ("12", not "12.0"); otherwise Swift's shortest
    /// round-tripping form, which is also valid `xsd:double` ("0.1", "1e-05").
    static func numberText(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 {
            return String(Int64(value))
        }
        return String(describing: value)
    }

    /// Spreadsheet column letters for a zero-based index: 0 → A, 25 → Z, 26 → AA.
    static func columnName(_ index: Int) -> String {
        var remaining = index + 1
        var letters: [Character] = []
        while remaining > 0 {
            let digit = (remaining - 1) % 26
            letters.insert(Character(Unicode.Scalar(UInt8(65 + digit))), at: 0)
            remaining = (remaining - 1) / 26
        }
        return String(letters)
    }

    /// Column widths from the longest text in each column, because the default width
    /// cuts off descriptions and readers of a demo should not have to widen columns.
    /// Rows with a single cell (notes, captions) are left out: their text spills into
    /// the empty cells to its right instead of widening the first column.
    private static func columnWidths(_ rows: [[OfficeDocuments.Cell]]) -> String {
        let tableRows = rows.filter { $0.count > 1 }
        let columns = tableRows.map(\.count).max() ?? 0
        guard columns > 0 else { return "" }
        var xml = " <cols>"
        for column in 0..<columns {
            let longest = tableRows.compactMap { $0.indices.contains(column) ? $0[column] : nil }
                .map { cell -> Int in
                    switch cell {
                    case .text(let text): return text.count
                    case .number(let value): return numberText(value).count
                    }
                }
                .max() ?? 0
            let width = min(60, max(8, longest + 2))
            xml += "<col min=\"\(column + 1)\" max=\"\(column + 1)\" width=\"\(width)\" customWidth=\"1\"/>"
        }
        return xml + "</cols>\n"
    }

    /// Spreadsheet applications refuse sheet names that contain `[]:*?/\`, that start or
    /// end with an apostrophe, that are empty or longer than 31 characters.
    static func legalSheetName(_ name: String) -> String {
        let forbidden: Set<Character> = ["[", "]", ":", "*", "?", "/", "\\"]
        var legal = String(name.map { forbidden.contains($0) || $0.isNewline ? "-" : $0 })
        legal = String(legal.prefix(31))
        while legal.hasPrefix("'") { legal.removeFirst() }
        while legal.hasSuffix("'") { legal.removeLast() }
        legal = legal.trimmingSpaces()
        return legal.isEmpty ? "Sheet1" : legal
    }
}

extension String {
    /// Leading and trailing spaces removed, without pulling in Foundation for one call.
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}
