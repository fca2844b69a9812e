import GRDB
import GRDBSQLite

/// One prepared statement run for many rows, each value bound straight to SQLite.
///
/// For the metadata cache's bulk writes (every entry of a listing, twice: its item and its
/// place in the listing): GRDB's `StatementArguments` boxes each value of each row, which
/// cost the daemon more CPU than SQLite's own work in a cold listing of 100,000 files. The
/// statement is made for this writer alone, so nothing else of GRDB's sees it bound or
/// stepped. Used inside a GRDB write, on its queue, like any statement.
struct BulkInsert {
    private let statement: Statement
    private let connection: SQLiteConnection?
    /// The next parameter to bind (SQLite counts from 1).
    private var parameter: Int32 = 1

    init(_ database: Database, sql: String) throws {
        statement = try database.makeStatement(sql: sql)
        connection = database.sqliteConnection
    }

    /// SQLite copies what it is given before the bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    mutating func bind(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            // An empty buffer may have no address, which SQLite would take for NULL.
            if let address = bytes.baseAddress, !bytes.isEmpty {
                let characters = UnsafeRawPointer(address).assumingMemoryBound(to: CChar.self)
                _ = sqlite3_bind_text(statement.sqliteStatement, parameter, characters, Int32(bytes.count), Self.transient)
            } else {
                _ = sqlite3_bind_text(statement.sqliteStatement, parameter, "", 0, Self.transient)
            }
        }
        parameter += 1
    }

    mutating func bind(_ text: String?) {
        guard let text else { return bindNull() }
        bind(text)
    }

    mutating func bind(_ value: Int64) {
        sqlite3_bind_int64(statement.sqliteStatement, parameter, value)
        parameter += 1
    }

    mutating func bind(_ value: Int64?) {
        guard let value else { return bindNull() }
        bind(value)
    }

    mutating func bind(_ bytes: [UInt8]?) {
        guard let bytes else { return bindNull() }
        bytes.withUnsafeBytes { buffer in
            if let address = buffer.baseAddress, !buffer.isEmpty {
                _ = sqlite3_bind_blob(statement.sqliteStatement, parameter, address, Int32(buffer.count), Self.transient)
            } else {
                _ = sqlite3_bind_zeroblob(statement.sqliteStatement, parameter, 0)
            }
        }
        parameter += 1
    }

    private mutating func bindNull() {
        sqlite3_bind_null(statement.sqliteStatement, parameter)
        parameter += 1
    }

    /// Runs the statement with the values bound since the last row, and readies it for the
    /// next. Throws what SQLite said when the row was not written.
    mutating func insertRow() throws {
        defer {
            sqlite3_reset(statement.sqliteStatement)
            sqlite3_clear_bindings(statement.sqliteStatement)
            parameter = 1
        }
        let code = sqlite3_step(statement.sqliteStatement)
        guard code == SQLITE_DONE else {
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
    }
}
