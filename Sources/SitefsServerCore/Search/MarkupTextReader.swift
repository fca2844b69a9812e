/// Which elements of an office format's XML carry its text, and where words and paragraphs
/// part: each format family states its rules (`OpenDocumentText`, `OfficeOpenXMLText`) and
/// `MarkupTextReader` applies them, so no format walks XML by hand.
struct MarkupRules: Sendable {
    /// Character data counts only inside one of these (ODF's `text:p`, OOXML's `w:t`): the
    /// whitespace a writer puts between elements, and the text of styles, formulas, field
    /// codes and deleted runs, is never read.
    var text: Set<XMLName>
    /// A line break before and after: paragraphs, headings, cells, rows, shared strings.
    var breaks: Set<XMLName> = []
    /// A space where it stands: ODF's `text:s`, `text:tab`, `text:line-break`; OOXML's tabs
    /// and breaks.
    var spaces: Set<XMLName> = []
    /// Nothing inside is read, text elements included: deleted text kept for change tracking,
    /// a fallback copy of content the document already holds, phonetic guides.
    var skipped: Set<XMLName> = []
}

/// Applies `MarkupRules` to one XML part's elements, feeding a `TextCollector`.
///
/// Nesting is counted, not stacked: `textDepth` and `skipDepth` are the number of open text
/// and skipped elements. libxml2 reports every end tag it reports a start for (a
/// well-formed part; a malformed one ends the parse), so the counts stay exact; they never
/// go below zero even if it did not, and its own nesting limit bounds them.
final class MarkupTextReader: XMLPartHandler {
    private let rules: MarkupRules
    private let collector: TextCollector
    private var textDepth = 0
    private var skipDepth = 0

    init(rules: MarkupRules, collector: TextCollector) {
        self.rules = rules
        self.collector = collector
    }

    func start(_ name: XMLName) throws(ExtractionStop) {
        if rules.skipped.contains(name) { skipDepth += 1 }
        guard skipDepth == 0 else { return }
        if rules.breaks.contains(name) { collector.breakLine() }
        if rules.spaces.contains(name) { collector.space() }
        if rules.text.contains(name) { textDepth += 1 }
    }

    func end(_ name: XMLName) throws(ExtractionStop) {
        if rules.skipped.contains(name) {
            skipDepth = max(0, skipDepth - 1)
            return
        }
        guard skipDepth == 0 else { return }
        if rules.text.contains(name) { textDepth = max(0, textDepth - 1) }
        if rules.breaks.contains(name) { collector.breakLine() }
    }

    func characters(_ text: UnsafeBufferPointer<UInt8>) throws(ExtractionStop) {
        guard textDepth > 0, skipDepth == 0 else { return }
        try collector.append(utf8: text)
    }
}

extension Set where Element == XMLName {
    /// The same local names in each of these namespaces (OOXML's transitional and strict
    /// namespaces name the same elements).
    static func names(_ localNames: [String], in namespaces: [String]) -> Set<XMLName> {
        Set(namespaces.flatMap { namespace in localNames.map { XMLName(namespace, $0) } })
    }
}
