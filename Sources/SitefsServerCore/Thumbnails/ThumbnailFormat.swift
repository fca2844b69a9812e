/// Which files have thumbnails, and where the picture comes from, decided by the file name's
/// extension (as `ContentTypes` decides the media type). The bytes are then checked by what
/// reads them: libvips sniffs them and loads only the formats `CVips` leaves unblocked, so a
/// misnamed file gives no thumbnail, never a different loader.
enum ThumbnailFormat: Sendable, Equatable, CustomStringConvertible {
    /// A picture libvips decodes itself (JPEG, PNG, GIF, WebP, TIFF).
    case image
    /// A PDF's first page, rendered by libvips's poppler loader.
    case pdf
    /// An office document's own preview picture, which it keeps in its zip (`OfficeThumbnail`).
    case officeDocument(OfficeThumbnail.Family)

    /// For the log.
    var description: String {
        switch self {
        case .image: return "image"
        case .pdf: return "PDF"
        case .officeDocument(.openDocument): return "ODF document"
        case .officeDocument(.officeOpenXML): return "OOXML document"
        }
    }

    /// The format for a file name, or nil for files without thumbnails.
    static func of(name: String) -> ThumbnailFormat? {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "jpg", "jpeg", "jpe", "png", "gif", "webp", "tif", "tiff": return .image
        case "pdf": return .pdf
        case "odt", "ods", "odp", "odg", "ott", "ots", "otp", "otg": return .officeDocument(.openDocument)
        case "docx", "xlsx", "pptx", "docm", "xlsm", "pptm": return .officeDocument(.officeOpenXML)
        default: return nil
        }
    }
}
