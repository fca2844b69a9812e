/// Builds the status and header fields from the lines libcurl's header callback delivers.
///
/// libcurl reports every header block it sees: interim `100 Continue` responses and, were
/// redirects followed, each hop. A new status line therefore starts over, so what remains
/// at the end describes the final response only.
struct ResponseHeaderParser {
    private(set) var status = 0
    private(set) var headers = HTTPHeaders()

    /// Takes one raw line, CRLF included.
    mutating func consume(line bytes: UnsafeRawBufferPointer) {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0d || bytes[end - 1] == 0x0a { end -= 1 }
        // Decoded per line: a CRLF would otherwise form a single Character and resist trimming.
        let line = Substring(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self))
        if line.hasPrefix("HTTP/") {
            headers.removeAll()
            let fields = line.split(separator: " ", maxSplits: 2)
            status = fields.count >= 2 ? Int(fields[1]) ?? 0 : 0
        } else if line.isEmpty {
            return
        } else if line.first == " " || line.first == "\t" {
            // Obsolete line folding: the line continues the previous field's value.
            headers.appendToLastValue(" " + Self.trimmed(line))
        } else if let colon = line.firstIndex(of: ":") {
            headers.append(name: String(line[..<colon]), value: Self.trimmed(line[line.index(after: colon)...]))
        }
    }

    private static func trimmed(_ text: Substring) -> String {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
