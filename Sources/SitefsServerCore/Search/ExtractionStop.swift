/// Why reading a document's text ended before its end: thrown from deep inside a reader (a
/// zip entry's chunk, an XML callback, a pipe read) up to `DocumentText`, which turns it
/// into the document's outcome. The text read until then is kept in every case.
enum ExtractionStop: Error, Equatable, Sendable {
    /// `ExtractionLimits.maximumTextBytes` of text were kept.
    case textLimit
    /// `ExtractionLimits.timeLimit` passed.
    case timeLimit
    /// The document inflates to more markup than a document's text is ever read from (see
    /// `OfficeArchive.maximumMarkupBytes`): a zip bomb, or a part too large to index whole.
    case markupLimit
    /// The file is not what its name says, or is broken: why, for the log and the index.
    case failed(String)

    /// The outcome a document gets when its reading stopped here.
    func outcome(limits: ExtractionLimits) -> ExtractedText.Outcome {
        switch self {
        case .textLimit: .truncated("text limit: \(limits.maximumTextBytes) bytes kept")
        case .timeLimit: .truncated("time limit: \(limits.timeLimit) passed")
        case .markupLimit: .truncated("markup limit: \(OfficeArchive.maximumMarkupBytes(limits)) bytes of XML read")
        case .failed(let why): .failed(why)
        }
    }
}
