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
enum DocumentText {
    /// The text of the file at `path`, whose item is named `name` (its type comes from the
    /// name's extension, checked against the content). Never throws: what cannot be read is
    /// an outcome, and the item is still found by name.
    static func extract(fileAt path: String, name: String, limits: ExtractionLimits = ExtractionLimits()) async
        -> ExtractedText {
        let lowered = name.lowercased()
        guard lowered.hasSuffix(".txt") || lowered.hasSuffix(".md") || lowered.hasSuffix(".csv") else {
            return ExtractedText(text: "", outcome: .unsupportedType)
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return ExtractedText(text: "", outcome: .failed("cannot open the stored file"))
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: limits.maximumTextBytes + 1)) ?? Data()
        let truncated = data.count > limits.maximumTextBytes
        let text = String(decoding: data.prefix(limits.maximumTextBytes), as: UTF8.self)
        return ExtractedText(text: text, outcome: truncated ? .truncated("text limit") : .complete)
    }
}
