import Foundation

/// How much work the server spends on one document's text: its bytes, the text kept, the
/// time. A document past a limit is indexed with what was read by then (`truncated`), so a
/// huge or hostile file costs a bounded amount and is still found by name.
struct ExtractionLimits: Sendable, Equatable {
    /// Larger files are not opened (found by name only).
    var maximumInputBytes: Int64 = 256 << 20
    /// Text kept per document (UTF-8 bytes).
    var maximumTextBytes: Int = 1 << 20
    /// Wall time per document.
    var timeLimit: Duration = .seconds(20)
}

/// The text of one stored version, as far as it could be read.
struct ExtractedText: Sendable, Equatable {
    enum Outcome: Sendable, Equatable {
        case complete
        /// A limit was reached; `text` is what was read before it.
        case truncated(String)
        /// A type whose text the server does not read (pictures, archives): found by name.
        case unsupportedType
        /// The file could not be read as its type says (corrupt, encrypted): found by name.
        case failed(String)
    }

    var text: String
    var outcome: Outcome
}

/// Reads the text of documents (plain text, ODF, OOXML, PDF) for the search index.
///
/// The type comes from the name's extension and is checked against the first bytes
/// (`DocumentKind`); each family has its reader (`PlainText`, `OpenDocumentText` and
/// `OfficeOpenXMLText` over `OfficeArchive`, `PDFText` over `BoundedProcess`), all feeding
/// one `TextCollector`, which keeps the text limit and the deadline. Whatever stops a reader
/// (`ExtractionStop`) becomes the outcome, with the text read until then.
enum DocumentText {
    /// Extraction blocks (file reads, inflating, a child's pipe), so it runs here, off
    /// Swift's cooperative pool. Concurrent: how many documents are read at once is the
    /// caller's to bound (the index worker).
    private static let queue = DispatchQueue(label: "sitefs.search-extraction", attributes: .concurrent)

    /// The longest time limit honoured: a larger one is taken as this.
    static let longestTimeLimit: Duration = .seconds(24 * 3600)

    /// The text of the file at `path`, whose item is named `name` (its type comes from the
    /// name's extension, checked against the content). Never throws: what cannot be read is
    /// an outcome, and the item is still found by name.
    static func extract(fileAt path: String, name: String, limits: ExtractionLimits = ExtractionLimits()) async
        -> ExtractedText {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: extractNow(fileAt: path, name: name, limits: limits)) }
        }
    }

    /// `extract` on the calling thread. `pdftotext` replaces the program found on PATH
    /// (tests use a stand-in that hangs).
    static func extractNow(fileAt path: String, name: String, limits: ExtractionLimits, pdftotext: String? = nil)
        -> ExtractedText {
        let timeLimit = min(max(limits.timeLimit, .zero), longestTimeLimit)
        let deadline = ContinuousClock.now.advanced(by: timeLimit)
        guard let kind = DocumentKind(name: name) else { return ExtractedText(text: "", outcome: .unsupportedType) }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            return ExtractedText(text: "", outcome: .failed("the stored file is missing or not a regular file"))
        }
        let size = Int64(info.st_size)
        guard size <= limits.maximumInputBytes else {
            return ExtractedText(text: "", outcome: .truncated("input limit: the file is \(size) bytes, over \(limits.maximumInputBytes)"))
        }
        if let why = kind.mismatch(head: head(of: path)) { return ExtractedText(text: "", outcome: .failed(why)) }
        let collector = TextCollector(maximumBytes: limits.maximumTextBytes, deadline: deadline)
        do throws(ExtractionStop) {
            switch kind {
            case .plainText:
                try PlainText.read(fileAt: path, collector: collector)
            case .openDocument:
                try OpenDocumentText.read(OfficeArchive(path: path, collector: collector, limits: limits))
            case .officeOpenXML(let family):
                try OfficeOpenXMLText.read(OfficeArchive(path: path, collector: collector, limits: limits), kind: family)
            case .pdf:
                try PDFText.read(fileAt: path, collector: collector, program: pdftotext)
            }
            return ExtractedText(text: collector.text, outcome: .complete)
        } catch {
            return ExtractedText(text: collector.text, outcome: error.outcome(limits: limits))
        }
    }

    /// The file's first bytes, as many as `DocumentKind.mismatch` looks at (fewer for a
    /// shorter file, none for one that cannot be read: it then fails the check).
    private static func head(of path: String) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        return Array((try? handle.read(upToCount: DocumentKind.pdfHeaderWindow)) ?? Data())
    }
}
