import GRDB
import GRDBSQLite

/// One prepared statement run for many rows, each value bound straight to SQLite.
///
/// For the metadata cache's bulk writes (every entry of a listing, twice: its item and its
/// place in the listing): GRDB's `StatementArguments` boxes each value of each row, which
/// cost the daemon more CPU than SQLite's own work in a cold listing of 100,000 files.
/// The statement is the connection's cached one for `sql`, compiled once however often a
/// single item is written (once per new file): it is bound and stepped only between two
/// calls of `insertRow`, inside one GRDB write on its queue, and left reset with no values
/// bound, so whoever uses it next finds it as GRDB leaves a cached statement.
struct BulkInsert {
    private let statement: Statement
    private let connection: SQLiteConnection?
    /// The next parameter to bind (SQLite counts from 1).
    private var parameter: Int32 = 1
    /// What SQLite answered the first bind of this row it refused (the row is not written).
    private var refusedBind: Int32?

    init(_ database: Database, sql: String) throws {
        statement = try database.cachedStatement(sql: sql)
        connection = database.sqliteConnection
    }

    /// SQLite copies what it is given before the bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    mutating func bind(_ text: String) {
        var text = text
        let code = text.withUTF8 { bytes in
            // An empty buffer may have no address, which SQLite would take for NULL.
            guard let address = bytes.baseAddress, !bytes.isEmpty else {
                return sqlite3_bind_text(statement.sqliteStatement, parameter, "", 0, Self.transient)
            }
            guard let length = Int32(exactly: bytes.count) else { return SQLITE_TOOBIG }
            let characters = UnsafeRawPointer(address).assumingMemoryBound(to: CChar.self)
            return sqlite3_bind_text(statement.sqliteStatement, parameter, characters, length, Self.transient)
        }
        bound(code)
    }

    mutating func bind(_ text: String?) {
        guard let text else { return bindNull() }
        bind(text)
    }

    mutating func bind(_ value: Int64) {
        bound(sqlite3_bind_int64(statement.sqliteStatement, parameter, value))
    }

    mutating func bind(_ value: Int64?) {
        guard let value else { return bindNull() }
        bind(value)
    }

    mutating func bind(_ bytes: [UInt8]?) {
        guard let bytes else { return bindNull() }
        let code = bytes.withUnsafeBytes { buffer in
            guard let address = buffer.baseAddress, !buffer.isEmpty else {
                return sqlite3_bind_zeroblob(statement.sqliteStatement, parameter, 0)
            }
            guard let length = Int32(exactly: buffer.count) else { return SQLITE_TOOBIG }
            return sqlite3_bind_blob(statement.sqliteStatement, parameter, address, length, Self.transient)
        }
        bound(code)
    }

    private mutating func bindNull() {
        bound(sqlite3_bind_null(statement.sqliteStatement, parameter))
    }

    /// The next parameter, after SQLite answered `code` to binding this one.
    private mutating func bound(_ code: Int32) {
        if code != SQLITE_OK, refusedBind == nil { refusedBind = code }
        parameter += 1
    }

    /// Runs the statement with the values bound since the last row, and readies it for the
    /// next. Throws what SQLite said when the row was not written.
    mutating func insertRow() throws {
        defer {
            sqlite3_reset(statement.sqliteStatement)
            sqlite3_clear_bindings(statement.sqliteStatement)
            parameter = 1
            refusedBind = nil
        }
        if let refusedBind {
            throw DatabaseError(resultCode: ResultCode(rawValue: refusedBind), message: "a value could not be bound", sql: statement.sql)
        }
        let code = sqlite3_step(statement.sqliteStatement)
        guard code == SQLITE_DONE else {
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
    }
}
