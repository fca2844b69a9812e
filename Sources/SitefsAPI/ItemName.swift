/// The rules every item name must follow, on the server and on the client.
///
/// A name is one path component: valid UTF-8, 1 to 255 bytes, not `.` or `..`, no `/` and
/// no NUL. Names are compared byte for byte (no Unicode normalisation, no case folding),
/// so two names that render alike may coexist; that is what a POSIX directory does too.
public enum ItemName {
    /// The longest name in bytes, matching NAME_MAX on Linux.
    public static let maximumBytes = 255

    public enum Violation: Error, Equatable, Sendable, CustomStringConvertible {
        case empty
        case dotOrDotDot
        case containsSlash
        case containsNUL
        case tooLong(bytes: Int)
        case invalidUTF8

        public var description: String {
            switch self {
            case .empty: return "name is empty"
            case .dotOrDotDot: return "name may not be '.' or '..'"
            case .containsSlash: return "name may not contain '/'"
            case .containsNUL: return "name may not contain a NUL byte"
            case .tooLong(let bytes): return "name is \(bytes) bytes long; at most \(ItemName.maximumBytes) are allowed"
            case .invalidUTF8: return "name is not valid UTF-8"
            }
        }
    }

    /// Checks a name given as a String (already valid Unicode).
    public static func validate(_ name: String) throws(Violation) {
        try validate(utf8: Array(name.utf8))
    }

    /// Checks raw name bytes, e.g. as they came off the wire or out of a percent-decoder.
    public static func validate(utf8 bytes: [UInt8]) throws(Violation) {
        if bytes.isEmpty { throw .empty }
        if bytes == [0x2E] || bytes == [0x2E, 0x2E] { throw .dotOrDotDot }
        if bytes.contains(0x2F) { throw .containsSlash }
        if bytes.contains(0) { throw .containsNUL }
        if bytes.count > maximumBytes { throw .tooLong(bytes: bytes.count) }
        if String(validating: bytes, as: UTF8.self) == nil { throw .invalidUTF8 }
    }

    /// Returns the violation, or nil when the name is acceptable.
    public static func violation(of name: String) -> Violation? {
        do { try validate(name) } catch { return error }
        return nil
    }

    /// True when two names are the same name: the same bytes. Never compare names with
    /// `String`'s `==`, which is canonical equivalence: "café" in NFC and in NFD are equal
    /// Strings but two documents, and treating them as one sent a write to the other.
    public static func same(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }
}

/// A name as a dictionary or set key: hashed and compared as bytes (see `ItemName.same`).
public struct NameKey: Hashable, Sendable {
    public let bytes: [UInt8]

    public init(_ name: String) {
        bytes = Array(name.utf8)
    }
}
