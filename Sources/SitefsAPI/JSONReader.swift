/// A strict pull reader of JSON (RFC 8259) for the responses a client decodes by the
/// thousand: listing pages.
///
/// Foundation's `JSONDecoder` goes through `Decodable`'s generic containers, and on a
/// 10,000-file listing that cost about a third of the daemon's CPU (perf, `ls -l` cold).
/// Reading the bytes directly is several times cheaper. It is at least as strict as the
/// decoder it replaces (stricter where Foundation lets a trailing comma or a malformed
/// number in a skipped value pass): invalid UTF-8, unescaped control characters, lone
/// surrogates, leading zeros, trailing garbage and wrong types are errors, with the byte
/// offset where it went wrong.
/// Unknown object keys are skipped (validated, not kept), so a newer server may add fields.
/// Nesting deeper than `maximumDepth` is refused: the reader recurses, and no response of
/// the API nests more than five levels (a change page's item's lock).
public struct JSONReader {
    public struct Error: Swift.Error, CustomStringConvertible {
        public let offset: Int
        public let message: String
        public var description: String { "\(message) at byte \(offset)" }
    }

    /// Objects and arrays nested deeper than this are refused rather than recursed into.
    static let maximumDepth = 64

    /// Valid only during `read`, which alone makes readers.
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Reads one JSON document with `body`, which must consume its single top-level value;
    /// only whitespace may follow it.
    public static func read<T>(_ data: [UInt8], _ body: (inout JSONReader) throws(Error) -> T) throws(Error) -> T {
        let result: Result<T, Error> = data.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            do throws(Error) {
                let value = try body(&reader)
                reader.skipWhitespace()
                guard reader.position == buffer.count else { throw reader.error("unexpected data after the JSON value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    // MARK: Values

    /// Reads an object, calling `member` with each key; `member` must read or skip the value.
    public mutating func readObject(_ member: (inout JSONReader, String) throws(Error) -> Void) throws(Error) {
        try enter(UInt8(ascii: "{"), "an object")
        defer { depth -= 1 }
        if consume(UInt8(ascii: "}")) { return }
        repeat {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try readString()
            try expect(UInt8(ascii: ":"))
            try member(&self, key)
        } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "}"))
    }

    /// Reads an array, calling `element` once per element; it must read or skip it.
    public mutating func readArray(_ element: (inout JSONReader) throws(Error) -> Void) throws(Error) {
        try enter(UInt8(ascii: "["), "an array")
        defer { depth -= 1 }
        if consume(UInt8(ascii: "]")) { return }
        repeat { try element(&self) } while consume(UInt8(ascii: ","))
        try expect(UInt8(ascii: "]"))
    }

    /// Consumes `null` and returns true, or returns false and consumes nothing.
    public mutating func readNull() -> Bool {
        skipWhitespace()
        return matches("null")
    }

    public mutating func readBool() throws(Error) -> Bool {
        skipWhitespace()
        if matches("true") { return true }
        if matches("false") { return false }
        throw error("expected true or false")
    }

    /// A whole number: optional minus, no leading zeros, no fraction or exponent.
    public mutating func readInt64() throws(Error) -> Int64 {
        skipWhitespace()
        let negative = consumeByte(UInt8(ascii: "-"))
        guard let first = peek(), isDigit(first) else { throw error("expected a number") }
        var value: Int64 = 0
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = peek(), isDigit(next) { throw error("a number with a leading zero") }
        }
        while let digit = peek(), isDigit(digit) {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let digitValue = Int64(digit - UInt8(ascii: "0"))
            let (sum, overflow2) = negative ? times10.subtractingReportingOverflow(digitValue) : times10.addingReportingOverflow(digitValue)
            guard !overflow1, !overflow2 else { throw error("a number out of range") }
            value = sum
            position += 1
        }
        if let next = peek(), next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            throw error("expected a whole number")
        }
        return value
    }

    public mutating func readString() throws(Error) -> String {
        skipWhitespace()
        guard consumeByte(UInt8(ascii: "\"")) else { throw error("expected a string") }
        let start = position
        var ascii = true
        // The common case: no escapes, so the bytes between the quotes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            ascii = ascii && byte < 0x80
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                let text = ascii ? String(decoding: slice, as: UTF8.self) : try utf8String(slice, at: start)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { return try readEscapedString(from: start) }
            guard byte >= 0x20 else { throw error("a control character in a string") }
            position += 1
        }
        throw error("an unterminated string")
    }

    /// Reads and discards any value (checking that it is well formed).
    public mutating func skipValue() throws(Error) {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "{"): try readObject { (reader: inout JSONReader, _: String) throws(Error) in try reader.skipValue() }
        case UInt8(ascii: "["): try readArray { (reader: inout JSONReader) throws(Error) in try reader.skipValue() }
        case UInt8(ascii: "\""): _ = try readString()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try readBool()
        case UInt8(ascii: "n"): guard readNull() else { throw error("expected null") }
        default: try skipNumber()
        }
    }

    /// An error at the current position, for a caller's own checks (a missing key, a bad
    /// value).
    public func error(_ message: String) -> Error { Error(offset: position, message: message) }

    // MARK: Pieces

    private mutating func readEscapedString(from start: Int) throws(Error) -> String {
        var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try utf8.withUnsafeBufferPointer { (buffer) throws(Error) -> String in try utf8String(buffer, at: start) }
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"): utf8.append(contentsOf: String(try readUnicodeEscape()).utf8)
                default: throw error("an invalid escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw error("a control character in a string") }
                utf8.append(byte)
            }
        }
        throw error("an unterminated string")
    }

    /// The character of `\uXXXX` (the `\u` read), joining a surrogate pair.
    private mutating func readUnicodeEscape() throws(Error) -> Character {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard matches("\\u") else { throw error("a lone surrogate in a string") }
            let second = try readHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw error("a lone surrogate in a string") }
            let scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Character(Unicode.Scalar(scalar)!)
        }
        guard let scalar = Unicode.Scalar(first) else { throw error("a lone surrogate in a string") }
        return Character(scalar)
    }

    private mutating func readHex4() throws(Error) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("a bad hex digit in a \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    /// The bytes as a string, refused unless they are valid UTF-8. `String(decoding:)` is the
    /// fast, specialised path but repairs what is invalid, so the result is compared with
    /// the input (`String(validating:)` is generic and cost more than the rest of a page).
    private func utf8String(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int) throws(Error) -> String {
        let text = String(decoding: buffer, as: UTF8.self)
        guard text.utf8.elementsEqual(buffer) else { throw Error(offset: offset, message: "invalid UTF-8 in a string") }
        return text
    }

    /// number = [ minus ] int [ frac ] [ exp ]
    private mutating func skipNumber() throws(Error) {
        _ = consumeByte(UInt8(ascii: "-"))
        guard let first = peek(), isDigit(first) else { throw error("expected a value") }
        position += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if consumeByte(UInt8(ascii: ".")) {
            guard let digit = peek(), isDigit(digit) else { throw error("a bad number") }
            skipDigits()
        }
        if consumeByte(UInt8(ascii: "e")) || consumeByte(UInt8(ascii: "E")) {
            if !consumeByte(UInt8(ascii: "+")) { _ = consumeByte(UInt8(ascii: "-")) }
            guard let digit = peek(), isDigit(digit) else { throw error("a bad number") }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func enter(_ opening: UInt8, _ what: String) throws(Error) {
        skipWhitespace()
        guard consumeByte(opening) else { throw error("expected \(what)") }
        guard depth < Self.maximumDepth else { throw error("nested too deeply") }
        depth += 1
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    /// Consumes `byte` if it comes next (after whitespace).
    private mutating func consume(_ byte: UInt8) -> Bool {
        skipWhitespace()
        return consumeByte(byte)
    }

    /// Consumes `byte` if it is the very next one.
    private mutating func consumeByte(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func expect(_ byte: UInt8) throws(Error) {
        guard consume(byte) else { throw error("expected '\(Character(Unicode.Scalar(byte)))'") }
    }

    private mutating func matches(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        for index in 0..<count where bytes[position + index] != literal.utf8Start[index] { return false }
        position += count
        return true
    }
}
