import GRDB
import GRDBSQLite

/// The insert of a child seen for the first time (`IdentityTable.added`), bound and stepped
/// through SQLite's own calls.
///
/// A first listing makes one row per entry, 100,000 for a large folder: through GRDB's
/// arguments (each value boxed, the statement looked up by its SQL text, the change count
/// and row id read through GRDB's checks) a row cost about 40% more instructions than it
/// does this way. Made once per transaction and used only inside it, on the table's queue,
/// like any statement; it is reset after each row, so GRDB finds it as it left it.
struct NewChildInsert {
    private let statement: Statement
    private let connection: SQLiteConnection?

    /// SQLite copies what it is given before the bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ database: Database) throws {
        statement = try database.cachedStatement(sql: """
            INSERT INTO nodes (parent, name, is_collection) VALUES (?, ?, ?) ON CONFLICT (parent, name) DO NOTHING
            """)
        connection = database.sqliteConnection
    }

    /// The new node of `name` in `parent`; nil, and nothing changed, when `parent` has a
    /// child of that name already.
    func insert(named name: String, isCollection: Bool, in parent: IdentityTable.Node) throws -> IdentityTable.Node? {
        let handle = statement.sqliteStatement
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        var name = name
        let boundName = name.withUTF8 { bytes in
            // An empty buffer may have no address, which SQLite would take for NULL.
            guard let address = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_text(handle, 2, "", 0, Self.transient) }
            guard let length = Int32(exactly: bytes.count) else { return SQLITE_TOOBIG }
            return sqlite3_bind_text(handle, 2, UnsafeRawPointer(address).assumingMemoryBound(to: CChar.self), length, Self.transient)
        }
        var bound = boundName
        if bound == SQLITE_OK { bound = sqlite3_bind_int64(handle, 1, parent) }
        if bound == SQLITE_OK { bound = sqlite3_bind_int(handle, 3, isCollection ? 1 : 0) }
        guard bound == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: bound), message: "a value could not be bound", sql: statement.sql)
        }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
        guard sqlite3_changes(connection) == 1 else { return nil }
        return sqlite3_last_insert_rowid(connection)
    }
}
