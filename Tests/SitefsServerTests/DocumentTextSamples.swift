import Foundation
import SitefsTestSupport
import Testing
import ZIPFoundation

/// Real documents for the text extraction tests, written by LibreOffice (headless, with a
/// private profile and home) once per test run: a text document as .odt, .docx and .pdf, a
/// spreadsheet as .ods and .xlsx, a two-slide presentation as .odp and .pptx. Each holds the
/// same marks: non-ASCII words, a paragraph (cell, slide) ending in "end" followed by one
/// starting with "start", so a test sees both the words and that they did not run together.
final class DocumentTextSamples: Sendable {
    static let shared = Result { try DocumentTextSamples() }

    static let soffice = "/usr/bin/soffice"
    /// Words every sample holds.
    static let words = ["Brandschutztür", "Prüfung", "café"]

    let folder: URL

    func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    private init() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.soffice),
                     "LibreOffice (soffice, with Writer, Calc and Impress) is needed: scripts/test installs it")
        folder = DocumentTextFiles.scratch.appendingPathComponent("samples")
        let sources = folder.appendingPathComponent("sources")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try Self.html.write(to: sources.appendingPathComponent("text.html"), atomically: true, encoding: .utf8)
        try Self.csv.write(to: sources.appendingPathComponent("sheet.csv"), atomically: true, encoding: .utf8)
        try Self.flatPresentation.write(to: sources.appendingPathComponent("slides.fodp"), atomically: true, encoding: .utf8)
        let profile = folder.appendingPathComponent("profile")
        defer { try? FileManager.default.removeItem(at: profile) }
        let home = try PrivateHome(in: folder.appendingPathComponent("office"))
        let conversions: [(source: String, filter: String?, format: String)] = [
            ("text.html", "HTML (StarWriter)", "odt"), ("text.html", "HTML (StarWriter)", "docx"),
            ("text.html", "HTML (StarWriter)", "pdf"),
            ("sheet.csv", "CSV:44,34,76,1", "ods"), ("sheet.csv", "CSV:44,34,76,1", "xlsx"),
            ("slides.fodp", nil, "odp"), ("slides.fodp", nil, "pptx"),
        ]
        for conversion in conversions {
            var arguments = ["-env:UserInstallation=\(profile.absoluteString)", "--headless", "--norestore"]
            if let filter = conversion.filter { arguments.append("--infilter=\(filter)") }
            arguments += ["--convert-to", conversion.format, "--outdir", folder.path,
                          sources.appendingPathComponent(conversion.source).path]
            let result = try run(URL(fileURLWithPath: Self.soffice), arguments, timeout: 120, environment: home.environment)
            let output = (conversion.source as NSString).deletingPathExtension + "." + conversion.format
            try #require(result.status == 0 && FileManager.default.fileExists(atPath: path(output)),
                         "soffice --convert-to \(conversion.format) \(conversion.source): \(result.out) \(result.err)")
        }
    }

    static let html = """
        <html><head><meta charset="utf-8"><title>Prüfbericht</title></head><body>
        <h1>Brandschutztür Prüfung café</h1>
        <p>The first paragraph ends with end</p>
        <p>start of the second paragraph</p>
        <table><tr><td>cellone</td><td>celltwo</td></tr></table>
        </body></html>
        """

    static let csv = "Brandschutztür,Prüfung café\nthe row ends with end,start of the next row\n"

    static let flatPresentation = """
        <?xml version="1.0" encoding="UTF-8"?>
        <office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" \
        xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" \
        xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" \
        xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" \
        office:mimetype="application/vnd.oasis.opendocument.presentation">
        <office:body><office:presentation>
        <draw:page draw:name="one"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box>\
        <text:p>Brandschutztür Prüfung café</text:p><text:p>slide one ends with end</text:p></draw:text-box></draw:frame></draw:page>
        <draw:page draw:name="two"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box>\
        <text:p>start of slide two</text:p></draw:text-box></draw:frame></draw:page>
        </office:presentation></office:body></office:document>
        """
}

/// Hand-made zips and files for the hostile cases.
enum DocumentTextFiles {
    /// Everything these tests write, removed when the test process exits.
    static let scratch: URL = {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("document-text-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: DocumentTextFiles.scratch) }
        return scratch
    }()

    static let folder: URL = {
        let folder = scratch.appendingPathComponent("files")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// Writes `bytes` to a fresh file named `name` and returns its path.
    static func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let directory = folder.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    /// A zip at a fresh path named `name`, whose entries' bytes come from `entries` in pieces
    /// (so a 100 MiB entry is never held whole).
    static func zip(_ name: String, _ entries: [(path: String, size: Int, bytes: (Int, Int) -> Data)]) throws -> String {
        let directory = folder.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent(name)
        let archive = try Archive(url: url, accessMode: .create)
        for entry in entries {
            try archive.addEntry(with: entry.path, type: .file, uncompressedSize: Int64(entry.size),
                                 compressionMethod: entry.path == "mimetype" ? .none : .deflate) { position, size in
                entry.bytes(Int(position), size)
            }
        }
        return url.path
    }

    /// A zip of small entries given whole.
    static func zip(_ name: String, _ entries: [(String, String)]) throws -> String {
        try zip(name, entries.map { entry in
            let data = Data(entry.1.utf8)
            return (entry.0, data.count, { position, size in data.subdata(in: position..<position + size) })
        })
    }

    static let odfMimetype = ("mimetype", "application/vnd.oasis.opendocument.text")

    /// content.xml of an ODF text document whose body is `body`.
    static func odfContent(_ body: String, doctype: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>\(doctype)<office:document-content \
        xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" \
        xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>\(body)\
        </office:text></office:body></office:document-content>
        """
    }
}
