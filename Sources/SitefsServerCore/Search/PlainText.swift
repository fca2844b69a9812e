import Foundation

/// The text of a plain-text file (notes, Markdown, CSV, JSON, logs, configuration), read as
/// UTF-8 in chunks: invalid bytes become U+FFFD (a Latin-1 file keeps its ASCII words), a
/// byte-order mark is dropped, and a NUL byte anywhere read means the file is binary under a
/// text name, which fails. Reading stops once the text is full, so a huge log costs its
/// first megabyte; the deadline is checked after each chunk.
enum PlainText {
    static let chunkBytes = 64 << 10

    static func read(fileAt path: String, collector: TextCollector) throws(ExtractionStop) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw .failed("the stored file cannot be opened") }
        defer { try? handle.close() }
        var decoder = UTF8Chunks()
        var first = true
        while true {
            try collector.checkTime()
            let data: Data
            do {
                guard let read = try handle.read(upToCount: chunkBytes), !read.isEmpty else { break }
                data = read
            } catch {
                throw .failed("the stored file cannot be read: \(error)")
            }
            let result = data.withUnsafeBytes { raw in
                Result { () throws(ExtractionStop) in
                    var bytes = raw.bindMemory(to: UInt8.self)
                    guard !bytes.contains(0) else { throw .failed("not text: it holds NUL bytes") }
                    if first && bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = UnsafeBufferPointer(rebasing: bytes[3...]) }
                    try collector.append(decoder.decode(bytes))
                }
            }
            first = false
            try result.get()
        }
        try collector.append(decoder.finish())
    }
}
