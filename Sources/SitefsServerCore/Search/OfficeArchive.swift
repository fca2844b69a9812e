import Foundation
@preconcurrency import ZIPFoundation

/// An office document's zip (ODF or OOXML), read for text with ZIPFoundation: each XML part
/// is inflated in chunks straight into an `XMLPartParser`, so neither the part nor its text
/// is held whole.
///
/// Bounds, each checked as the bytes come, never taken from what the zip declares:
/// - at most `maximumEntries` directory entries are looked at (an office document has tens);
/// - at most `maximumParts` parts are parsed per document (slides, sheets, headers);
/// - at most `maximumMarkupBytes` bytes of XML are inflated over the whole document, so a
///   zip bomb (an entry declaring, or only turning out, to inflate to gigabytes) costs that
///   much and no more: `ExtractionStop.markupLimit`;
/// - the deadline is checked before each part and after each inflated chunk (64 KiB at most).
/// Only entries of type file are read: ZIPFoundation reads a symlink entry's declared size
/// in one allocation.
final class OfficeArchive {
    static let maximumEntries = 10_000
    static let maximumParts = 1_000
    /// Inflated chunks handed to the parser: each one is a point where time is checked.
    static let chunkBytes = 64 << 10

    /// XML read per document: 64 bytes of markup per byte of text kept (a spreadsheet's
    /// cells and a word processor's runs carry far more markup than text), at least 16 MiB
    /// and at most 1 GiB. For the default 1 MiB of text, 64 MiB.
    static func maximumMarkupBytes(_ limits: ExtractionLimits) -> Int64 {
        let perText = Int64(min(max(limits.maximumTextBytes, 0), 1 << 24)) * 64
        return min(max(perText, 16 << 20), 1 << 30)
    }

    private let archive: Archive
    private let collector: TextCollector
    /// File entries by path, as the central directory lists them (the first of duplicates).
    private let entries: [String: Entry]
    private var markupLeft: Int64
    private var partsRead = 0

    init(path: String, collector: TextCollector, limits: ExtractionLimits) throws(ExtractionStop) {
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw .failed("not a readable zip file: \(error)")
        }
        self.collector = collector
        markupLeft = Self.maximumMarkupBytes(limits)
        var entries: [String: Entry] = [:]
        var seen = 0
        for entry in archive {
            seen += 1
            guard seen <= Self.maximumEntries else {
                throw .failed("the zip lists more than \(Self.maximumEntries) entries")
            }
            if entry.type == .file && entries[entry.path] == nil { entries[entry.path] = entry }
        }
        self.entries = entries
    }

    /// The paths of the file entries `matching` accepts, in no particular order.
    func paths(matching: (String) -> Bool) -> [String] {
        entries.keys.filter(matching)
    }

    func contains(_ path: String) -> Bool { entries[path] != nil }

    /// Reads the part at `path` for text by `rules`; a part the zip does not hold has none.
    func read(_ path: String, rules: MarkupRules) throws(ExtractionStop) {
        guard let entry = entries[path] else { return }
        try collector.checkTime()
        partsRead += 1
        guard partsRead <= Self.maximumParts else { throw .markupLimit }
        let parser = XMLPartParser(part: path, handler: MarkupTextReader(rules: rules, collector: collector))
        do {
            _ = try archive.extract(entry, bufferSize: Self.chunkBytes, skipCRC32: false) { chunk in
                try self.collector.checkTime()
                let count = Int64(chunk.count)
                guard count <= self.markupLeft else { throw ExtractionStop.markupLimit }
                self.markupLeft -= count
                try chunk.withUnsafeBytes { bytes in try parser.feed(bytes) }
            }
        } catch let stop as ExtractionStop {
            throw stop
        } catch {
            throw .failed("\(path) cannot be read from the zip: \(error)")
        }
        try parser.finish()
        // A part is a unit of its own (a slide, a sheet, a header): its text never runs on
        // into the next one's.
        collector.breakLine()
    }
}
