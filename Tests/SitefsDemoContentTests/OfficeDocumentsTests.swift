import SitefsDemoContent
import Testing

/// The three generated formats, so every structural test runs against each of them.
enum DocumentKind: String, CaseIterable, Sendable {
    case odt, docx, xlsx

    /// Parts a reader needs to open the document at all.
    var requiredParts: [String] {
        switch self {
        case .odt: ["mimetype", "META-INF/manifest.xml", "content.xml", "styles.xml", "meta.xml"]
        case .docx: ["[Content_Types].xml", "_rels/.rels", "word/document.xml", "word/_rels/document.xml.rels"]
        case .xlsx:
            ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels",
             "xl/worksheets/sheet1.xml"]
        }
    }

    /// The part holding the document's text.
    var mainPart: String {
        switch self {
        case .odt: "content.xml"
        case .docx: "word/document.xml"
        case .xlsx: "xl/worksheets/sheet1.xml"
        }
    }

    func make(title: String, paragraphs: [String]) -> [UInt8] {
        switch self {
        case .odt: OfficeDocuments.odt(title: title, paragraphs: paragraphs)
        case .docx: OfficeDocuments.docx(title: title, paragraphs: paragraphs)
        case .xlsx: OfficeDocuments.xlsx(sheetName: title, rows: [[.text(title)]] + paragraphs.map { [.text($0)] })
        }
    }
}

/// Text that breaks XML if any generator forgets to escape, plus non-ASCII.
let hostileText = #"Crane <TC1> & "hook" 'block' – työmaa"#

@Suite("Office documents")
struct OfficeDocumentsTests {
    @Test("the ODT mimetype is the first entry, stored, with its bytes at offset 38")
    func odtMimetype() throws {
        let document = OfficeDocuments.odt(title: "Inspection", paragraphs: ["Checked."])
        let reader = try ZipTestReader(document)
        let first = try #require(reader.entries.first)
        #expect(first.name == "mimetype")
        #expect(first.method == 0)
        #expect(first.localExtraLength == 0)
        #expect(first.dataOffset == 38)
        let mediaType = Array("application/vnd.oasis.opendocument.text".utf8)
        #expect(Array(document[0..<4]) == [0x50, 0x4B, 0x03, 0x04])
        #expect(Array(document[30..<38]) == Array("mimetype".utf8))
        #expect(Array(document[38..<(38 + mediaType.count)]) == mediaType)
    }

    @Test("required parts are present and every XML part is well-formed", arguments: DocumentKind.allCases)
    func wellFormed(kind: DocumentKind) throws {
        let reader = try ZipTestReader(kind.make(title: hostileText, paragraphs: [hostileText, "Line 1\nLine 2"]))
        let names = Set(reader.entries.map(\.name))
        for part in kind.requiredParts {
            #expect(names.contains(part), "missing \(part)")
        }
        let xmlParts = reader.entries.filter { $0.name.hasSuffix(".xml") || $0.name.hasSuffix(".rels") }
        #expect(xmlParts.count >= kind.requiredParts.count - (kind == .odt ? 1 : 0))
        for part in xmlParts {
            #expect(throws: Never.self, "\(part.name)") { try XMLTestNode.parse(part.data) }
        }
    }

    @Test("text with <&>\"' survives escaping in every format", arguments: DocumentKind.allCases)
    func escaping(kind: DocumentKind) throws {
        let reader = try ZipTestReader(kind.make(title: "Title", paragraphs: [hostileText]))
        let raw = try reader.data(named: kind.mainPart)
        let rawText = String(decoding: raw, as: UTF8.self)
        #expect(rawText.contains("Crane &lt;TC1&gt; &amp; &quot;hook&quot; &apos;block&apos; – työmaa"))
        let root = try XMLTestNode.parse(raw)
        #expect(root.allText.contains(hostileText))
    }

    @Test("control characters cannot break well-formedness", arguments: DocumentKind.allCases)
    func controlCharacters(kind: DocumentKind) throws {
        let reader = try ZipTestReader(kind.make(title: "Bell \u{07}", paragraphs: ["NUL \u{00} and ESC \u{1B}"]))
        let root = try XMLTestNode.parse(try reader.data(named: kind.mainPart))
        #expect(root.allText.contains("NUL \u{FFFD} and ESC \u{FFFD}"))
    }

    @Test("ODT content has a heading, paragraphs and a table in office:body/office:text")
    func odtStructure() throws {
        let document = OfficeDocuments.odt(title: "Formwork", blocks: [
            "Deck checked.\nProps checked.",
            .heading("Checklist"),
            .table([["Item", "Result"], ["Props", "OK"], ["Edge protection"]]),
        ])
        let reader = try ZipTestReader(document)
        let root = try XMLTestNode.parse(try reader.data(named: "content.xml"))
        #expect(root.qualifiedName == "office:document-content")
        #expect(root.namespaceURI == "urn:oasis:names:tc:opendocument:xmlns:office:1.0")
        let text = try #require(root.path(["office:body", "office:text"]))
        #expect(text.children.map(\.qualifiedName) == ["text:h", "text:p", "text:h", "table:table"])
        #expect(text.children.first?.allText == "Formwork")
        #expect(text.children[1].children.map(\.qualifiedName) == ["text:line-break"])
        let rows = text.children[3].children.filter { $0.qualifiedName == "table:table-row" }
        #expect(rows.count == 3)
        #expect(rows.allSatisfy { $0.children.count == 2 }, "short rows are padded")
        #expect(rows[2].allText == "Edge protection")

        let manifest = try XMLTestNode.parse(try reader.data(named: "META-INF/manifest.xml"))
        let listed = manifest.children.compactMap { $0.attributes["manifest:full-path"] }
        #expect(Set(listed) == ["/", "content.xml", "styles.xml", "meta.xml"])
        let meta = try XMLTestNode.parse(try reader.data(named: "meta.xml"))
        #expect(meta.path(["office:meta", "dc:title"])?.text == "Formwork")
    }

    @Test("DOCX has a Title paragraph, body paragraphs, a table and section properties")
    func docxStructure() throws {
        let document = OfficeDocuments.docx(title: "Safety plan", blocks: [
            "Intro", .heading("Access"), .table([["Role", "Name"], ["Site manager", "M. Lindqvist"]]),
        ])
        let root = try XMLTestNode.parse(try ZipTestReader(document).data(named: "word/document.xml"))
        #expect(root.namespaceURI == "http://schemas.openxmlformats.org/wordprocessingml/2006/main")
        let body = try #require(root.child("w:body"))
        #expect(body.children.map(\.qualifiedName) == ["w:p", "w:p", "w:p", "w:tbl", "w:p", "w:sectPr"])
        #expect(body.children[0].path(["w:pPr", "w:pStyle"])?.attributes["w:val"] == "Title")
        #expect(body.children[0].allText == "Safety plan")
        #expect(body.children[2].path(["w:pPr", "w:pStyle"])?.attributes["w:val"] == "Heading2")
        let cells = body.children[3].descendants.filter { $0.qualifiedName == "w:tc" }
        #expect(cells.map(\.allText) == ["Role", "Name", "Site manager", "M. Lindqvist"])
    }

    @Test("XLSX writes inline strings for text and numeric cells for numbers")
    func xlsxCells() throws {
        let row: [OfficeDocuments.Cell] = ["Rebar"] + (1...27).map { .number(Double($0)) }
        let document = OfficeDocuments.xlsx(sheetName: "Lifts: [level 7]", rows: [row, [.number(12.5), .number(-0.25)]])
        let reader = try ZipTestReader(document)
        let sheet = try XMLTestNode.parse(try reader.data(named: "xl/worksheets/sheet1.xml"))
        let rows = try #require(sheet.child("sheetData")).children
        #expect(rows.map { $0.attributes["r"] } == ["1", "2"])
        let first = rows[0].children
        #expect(first[0].attributes["r"] == "A1")
        #expect(first[0].attributes["t"] == "inlineStr")
        #expect(first[0].path(["is", "t"])?.text == "Rebar")
        #expect(first[1].attributes["r"] == "B1" && first[1].attributes["t"] == nil)
        #expect(first[1].child("v")?.text == "1")
        #expect(first[26].attributes["r"] == "AA1")
        #expect(first[27].attributes["r"] == "AB1" && first[27].child("v")?.text == "27")
        #expect(rows[1].children.map { $0.child("v")?.text } == ["12.5", "-0.25"])

        let workbook = try XMLTestNode.parse(try reader.data(named: "xl/workbook.xml"))
        #expect(workbook.path(["sheets", "sheet"])?.attributes["name"] == "Lifts- -level 7-")
    }
}
