/// Decodes UTF-8 that arrives in chunks (a file read piece by piece, a pipe): a sequence cut
/// by a chunk's end is held back and completed by the next chunk, and invalid bytes become
/// U+FFFD, so what comes out is always valid and never depends on where the chunks fell.
struct UTF8Chunks {
    /// The start of a sequence the last chunk ended inside (at most 3 bytes).
    private var carry: [UInt8] = []

    /// The text of `chunk`, up to the last complete sequence in it.
    mutating func decode(_ chunk: UnsafeBufferPointer<UInt8>) -> String {
        var bytes = carry
        bytes.append(contentsOf: chunk)
        let end = Self.completeLength(bytes)
        carry = Array(bytes[end...])
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// What was held back: an unfinished sequence at the very end is invalid, so U+FFFD.
    mutating func finish() -> String {
        defer { carry = [] }
        return String(decoding: carry, as: UTF8.self)
    }

    /// The length of `bytes` without an unfinished sequence at its end. Looks back at most 3
    /// bytes: a lead byte announces 2 to 4.
    static func completeLength(_ bytes: [UInt8]) -> Int {
        var index = bytes.count
        var looked = 0
        while index > 0 && looked < 3 {
            index -= 1
            looked += 1
            let byte = bytes[index]
            if byte & 0xC0 == 0x80 { continue }  // a continuation byte: look further back
            let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return index + length > bytes.count ? index : bytes.count
        }
        return bytes.count
    }
}
