/// Generators for small office documents that LibreOffice (and Microsoft Office) open:
/// OpenDocument text (`odt`), WordprocessingML (`docx`) and SpreadsheetML (`xlsx`).
///
/// Each generator returns the finished ZIP container as bytes. The documents are
/// deliberately minimal (only the parts each format requires, plus styles so
/// headings and tables look like headings and tables), because they exist to give
/// the demo server and tests realistic files, not to be an office-format library.
public enum OfficeDocuments {
    /// A unit of document body text, shared by the text formats so one description
    /// of a document can be rendered as either `odt` or `docx`.
    public enum Block: Sendable, Equatable, ExpressibleByStringLiteral {
        /// A section heading (outline level 2; the document title is level 1).
        case heading(String)
        /// A body paragraph; `\n` inside it becomes a line break.
        case paragraph(String)
        /// A bordered table whose first row is the header row, set in bold.
        /// Short rows are padded with empty cells to the widest row.
        case table([[String]])

        /// A string literal is a paragraph, so plain text reads naturally in block lists.
        public init(stringLiteral value: String) {
            self = .paragraph(value)
        }
    }

    /// One spreadsheet cell: text is written as an inline string and numbers as
    /// numeric cells, so spreadsheet formulas can sum the demo quantities.
    public enum Cell: Sendable, Equatable, ExpressibleByStringLiteral,
        ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral
    {
        case text(String)
        case number(Double)

        public init(stringLiteral value: String) { self = .text(value) }
        public init(integerLiteral value: Int) { self = .number(Double(value)) }
        public init(floatLiteral value: Double) { self = .number(value) }
    }

    /// Makes each paragraph string a `.paragraph` block, for the simple generator forms.
    static func blocks(from paragraphs: [String]) -> [Block] {
        paragraphs.map(Block.paragraph)
    }

    /// Pads every row to the widest row's length, because both table formats expect
    /// a rectangular grid and the header row decides nothing about width on its own.
    static func rectangular(_ rows: [[String]]) -> (rows: [[String]], columns: Int) {
        let columns = max(1, rows.map(\.count).max() ?? 0)
        let padded = rows.map { $0 + Array(repeating: "", count: columns - $0.count) }
        return (padded, columns)
    }
}
