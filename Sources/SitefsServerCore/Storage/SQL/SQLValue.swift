/// A value passed to or read from the metadata database, in the few types the schema uses:
/// integers (ids, sizes, times, flags as 0/1), text and bytes (the server's keys).
///
/// The store's SQL is written once and runs on SQLite and PostgreSQL; values cross that
/// boundary as these cases, so neither engine's own value types leak into the document code.
enum SQLValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
}

/// What may be bound to a `?` in the store's SQL.
protocol SQLArgument: Sendable {
    var sqlValue: SQLValue { get }
}

extension Int64: SQLArgument { var sqlValue: SQLValue { .integer(self) } }
extension Int: SQLArgument { var sqlValue: SQLValue { .integer(Int64(self)) } }
extension Bool: SQLArgument { var sqlValue: SQLValue { .integer(self ? 1 : 0) } }
extension String: SQLArgument { var sqlValue: SQLValue { .text(self) } }
extension Array: SQLArgument where Element == UInt8 { var sqlValue: SQLValue { .bytes(self) } }
extension Optional: SQLArgument where Wrapped: SQLArgument {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// The metadata database answered with something the server did not expect (a missing
/// row it just wrote, a column of the wrong type): a 500 and a log line, never a trap.
struct StoreFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One result row: its columns in order, looked up by name (a row has a handful).
struct SQLRow: Sendable {
    private let names: [String]
    private let values: [SQLValue]

    init(names: [String], values: [SQLValue]) {
        self.names = names
        self.values = values
    }

    subscript(_ name: String) -> SQLValue {
        names.firstIndex(of: name).map { values[$0] } ?? .null
    }

    /// The name of the first column (for single-column queries).
    var firstColumn: String? { names.first }

    func int(_ name: String) throws -> Int64 {
        guard case .integer(let value) = self[name] else { throw mismatch(name, "an integer") }
        return value
    }

    func optionalInt(_ name: String) throws -> Int64? {
        if case .null = self[name] { return nil }
        return try int(name)
    }

    func text(_ name: String) throws -> String {
        guard case .text(let value) = self[name] else { throw mismatch(name, "text") }
        return value
    }

    func optionalText(_ name: String) throws -> String? {
        if case .null = self[name] { return nil }
        return try text(name)
    }

    /// A 0/1 flag.
    func bool(_ name: String) throws -> Bool { try int(name) != 0 }

    func bytes(_ name: String) throws -> [UInt8] {
        guard case .bytes(let value) = self[name] else { throw mismatch(name, "bytes") }
        return value
    }

    private func mismatch(_ name: String, _ expected: String) -> StoreFailure {
        StoreFailure("column \(name) is \(self[name]), not \(expected)")
    }
}
