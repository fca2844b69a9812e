/// The text of one document as its reader finds it, kept within the limits: at most
/// `maximumBytes` of UTF-8, and a deadline the reader checks between chunks.
///
/// What holds of the text it keeps:
/// - Words never run together: a reader marks where a paragraph, cell or slide ends
///   (`breakLine`) or where a tab or space element stands (`space`), and a separator is put
///   between the text before and after it. Runs of ASCII whitespace collapse to one space, or
///   one newline when the run holds a line break, so indentation and the empty cells of a
///   spreadsheet cost nothing. No whitespace leads or trails.
/// - It is valid UTF-8 when what it was given is (libxml2 hands over UTF-8; other readers
///   repair theirs with `String(decoding:)` first), and the cut at the byte limit falls on a
///   scalar boundary, never inside a UTF-8 sequence.
/// - Once full it throws `ExtractionStop.textLimit` at the next visible character, so a reader
///   stops reading; whitespace alone after the limit does not count as more text.
final class TextCollector {
    let maximumBytes: Int
    let deadline: ContinuousClock.Instant
    private var bytes: [UInt8] = []
    /// The separator owed before the next visible character, if any text comes before it.
    private var pending = Separator.none

    private enum Separator: Int, Comparable {
        case none, space, newline

        static func < (a: Separator, b: Separator) -> Bool { a.rawValue < b.rawValue }
    }

    init(maximumBytes: Int, deadline: ContinuousClock.Instant) {
        self.maximumBytes = max(0, maximumBytes)
        self.deadline = deadline
        bytes.reserveCapacity(min(self.maximumBytes, 64 << 10))
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }
    var byteCount: Int { bytes.count }

    /// Where a paragraph, heading, cell, row or slide ends.
    func breakLine() { pending = .newline }

    /// Where a space, tab or line-break element stands in a paragraph.
    func space() { pending = max(pending, .space) }

    /// Throws once the deadline has passed: readers call it between chunks, entries and pages.
    func checkTime() throws(ExtractionStop) {
        if ContinuousClock.now >= deadline { throw .timeLimit }
    }

    func append(_ string: String) throws(ExtractionStop) {
        var string = string
        let result = string.withUTF8 { buffer in Result { () throws(ExtractionStop) in try append(utf8: buffer) } }
        try result.get()
    }

    /// Appends UTF-8 text, collapsing its whitespace (see the type's comment).
    func append(utf8 piece: UnsafeBufferPointer<UInt8>) throws(ExtractionStop) {
        var index = 0
        while index < piece.count {
            let byte = piece[index]
            if let separator = Self.whitespace(byte) {
                pending = max(pending, separator)
                index += 1
                continue
            }
            // A run of visible bytes (any non-ASCII byte is visible: it belongs to a scalar).
            var end = index + 1
            while end < piece.count, Self.whitespace(piece[end]) == nil { end += 1 }
            try appendRun(UnsafeBufferPointer(rebasing: piece[index..<end]))
            index = end
        }
    }

    private func appendRun(_ run: UnsafeBufferPointer<UInt8>) throws(ExtractionStop) {
        if pending != .none && !bytes.isEmpty {
            guard bytes.count < maximumBytes else { throw .textLimit }
            bytes.append(pending == .newline ? 0x0A : 0x20)
        }
        pending = .none
        let room = maximumBytes - bytes.count
        if run.count <= room {
            bytes.append(contentsOf: run)
            return
        }
        // Cut where a scalar starts: a UTF-8 continuation byte is 0b10xxxxxx.
        var cut = room
        while cut > 0 && run[cut] & 0xC0 == 0x80 { cut -= 1 }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: run[0..<cut]))
        throw .textLimit
    }

    /// The separator an ASCII whitespace byte stands for, or nil for any other byte.
    private static func whitespace(_ byte: UInt8) -> Separator? {
        switch byte {
        case 0x20, 0x09, 0x0B: .space
        case 0x0A, 0x0C, 0x0D: .newline  // a form feed is pdftotext's page break
        default: nil
        }
    }
}
