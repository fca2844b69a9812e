import Foundation
@preconcurrency import ZIPFoundation

/// The preview picture an office document carries inside its zip, which office suites write
/// when they save: the document's first page as the program drew it. Reading it needs no
/// office suite on the server, and costs one bounded zip entry.
///
/// - ODF (`.odt`, `.ods`, `.odp`, `.odg` and their templates): `Thumbnails/thumbnail.png`,
///   which the ODF specification (part 3, 3.10) names; LibreOffice writes one of at most
///   256 x 256 pixels.
/// - OOXML (`.docx`, `.xlsx`, `.pptx`): `docProps/thumbnail.jpeg` (or `.jpg`, `.png`), which
///   Word, Excel and PowerPoint write when "save preview picture" is on; often absent. Some
///   programs write a Windows metafile (`.emf`, `.wmf`) instead, which libvips cannot draw:
///   those documents have no thumbnail.
enum OfficeThumbnail {
    enum Family: Sendable, Equatable {
        case openDocument
        case officeOpenXML

        /// Where the picture may be, in the order tried.
        var candidates: [String] {
            switch self {
            case .openDocument: return ["Thumbnails/thumbnail.png"]
            case .officeOpenXML: return ["docProps/thumbnail.jpeg", "docProps/thumbnail.jpg", "docProps/thumbnail.png"]
            }
        }
    }

    /// A preview picture is small (LibreOffice's is under 100 KB); one that says (or turns
    /// out, while inflating) to be larger than this is not read, so a crafted entry cannot
    /// make the server inflate gigabytes.
    static let maximumPictureBytes = 20 << 20

    /// The document's preview picture, still encoded (PNG or JPEG).
    static func picture(inDocumentAt path: String, family: Family) throws(ThumbnailMaker.Failure) -> [UInt8] {
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw ThumbnailMaker.Failure(description: "not a zip file: \(error)")
        }
        guard let entry = family.candidates.lazy.compactMap({ archive[$0] }).first(where: { $0.type == .file }) else {
            throw ThumbnailMaker.Failure(description: "the document carries no preview picture")
        }
        guard entry.uncompressedSize <= UInt64(maximumPictureBytes) else {
            throw ThumbnailMaker.Failure(description: "its preview picture says it is \(entry.uncompressedSize) bytes")
        }
        var picture: [UInt8] = []
        do {
            _ = try archive.extract(entry, skipCRC32: false) { chunk in
                guard picture.count + chunk.count <= maximumPictureBytes else { throw PictureTooLarge() }
                picture.append(contentsOf: chunk)
            }
        } catch {
            throw ThumbnailMaker.Failure(description: "its preview picture (\(entry.path)) cannot be read: \(error)")
        }
        return picture
    }

    private struct PictureTooLarge: Error, CustomStringConvertible {
        var description: String { "larger than \(OfficeThumbnail.maximumPictureBytes) bytes once inflated" }
    }
}
