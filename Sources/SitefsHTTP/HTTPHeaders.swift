/// Response header fields in arrival order, looked up without regard to case.
///
/// HTTP field names are case-insensitive (RFC 9110 section 5.1) and servers differ in how they
/// spell them, so every lookup lower-cases ASCII on both sides. Repeated fields are kept
/// separately rather than joined, because some (e.g. `Set-Cookie`) cannot be joined.
public struct HTTPHeaders: Sendable, Sequence {
    public typealias Element = (name: String, value: String)

    private var fields: [Element] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of the field, or nil if it is absent.
    public subscript(name: String) -> String? {
        let wanted = Self.lowercased(name)
        return fields.first { Self.lowercased($0.name) == wanted }?.value
    }

    /// Every value of the field, in arrival order.
    public func values(for name: String) -> [String] {
        let wanted = Self.lowercased(name)
        return fields.filter { Self.lowercased($0.name) == wanted }.map(\.value)
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    mutating func append(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    mutating func appendToLastValue(_ continuation: String) {
        guard let last = fields.indices.last else { return }
        fields[last].value += continuation
    }

    mutating func removeAll() {
        fields.removeAll(keepingCapacity: true)
    }

    /// ASCII-only lower-casing: field names are tokens, and locale rules must not apply.
    private static func lowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { ($0 >= 0x41 && $0 <= 0x5a) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
