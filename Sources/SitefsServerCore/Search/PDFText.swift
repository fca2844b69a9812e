import Foundation
import Logging
import Synchronization

/// The text of a PDF, as poppler's `pdftotext` (poppler-utils) reads it, run as a
/// `BoundedProcess`: a PDF is a program-like format whose parsers have a long history of
/// crashes and loops on crafted files, so its parser runs outside the server, is killed at
/// the deadline and once the text is full, and its output is read as it comes (pages in
/// reading order, each ended by a form feed, which the collector makes a line break).
///
/// pdftotext is looked up on PATH at each call (so installing poppler-utils needs no
/// restart). Without it, PDFs fail with "pdftotext not installed", logged once per process.
enum PDFText {
    static let logger = Logger(label: "sitefs-server.search")
    private static let missingLogged = Mutex(false)

    /// `program` replaces the pdftotext found on `searchPath` (PATH's folders, `:`-separated).
    static func read(fileAt path: String, collector: TextCollector, program: String? = nil,
                     searchPath: String? = ProcessInfo.processInfo.environment["PATH"]) throws(ExtractionStop) {
        guard let program = program ?? locate("pdftotext", searchPath: searchPath ?? "/usr/bin:/bin") else {
            let first = missingLogged.withLock { logged in
                defer { logged = true }
                return !logged
            }
            if first {
                logger.warning("pdftotext not found on PATH: PDFs are indexed by name only (install poppler-utils)")
            }
            throw .failed("pdftotext not installed")
        }
        // A path that starts with "-" would be read as an option.
        let argument = path.hasPrefix("-") ? "./" + path : path
        var decoder = UTF8Chunks()
        let ending = try BoundedProcess.run(
            executable: program, arguments: ["-q", "-enc", "UTF-8", "-eol", "unix", argument, "-"],
            environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"], deadline: collector.deadline
        ) { (chunk) throws(ExtractionStop) in
            try collector.append(decoder.decode(chunk))
        }
        try collector.append(decoder.finish())
        switch ending {
        case .exited(0): return
        // pdftotext's exit codes (its manual page): 1 the file could not be opened as a PDF
        // (damaged, or encrypted with a password), 3 the PDF forbids copying its text.
        case .exited(1): throw .failed("pdftotext could not read it (damaged, or encrypted)")
        case .exited(3): throw .failed("the PDF does not permit copying its text")
        case .exited(let status): throw .failed("pdftotext exited with status \(status)")
        case .signaled(let signal): throw .failed("pdftotext was killed by signal \(signal) (a crash)")
        }
    }

    /// The first executable named `name` in the folders of `searchPath` (absolute ones only).
    static func locate(_ name: String, searchPath: String) -> String? {
        for folder in searchPath.split(separator: ":").prefix(64) where folder.hasPrefix("/") {
            let candidate = folder + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
