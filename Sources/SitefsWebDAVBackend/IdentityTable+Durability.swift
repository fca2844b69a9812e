import GRDB
import Synchronization

/// When the table's commits reach the disk.
///
/// Every commit waits for the disk (synchronous=FULL), except the one that records a file
/// this mount has just created (`writeDeferringDurability`): a folder of 1,000 new files
/// cost 1,000 fsyncs here on top of the upload journal's, each under the table's queue,
/// which every request waits for. Such a commit is in the WAL when it returns, so it
/// survives the daemon's death; only a power cut can take it back, and then only what no
/// other file names durably:
/// - The upload journal and the pins name nodes in files of their own that are fsynced.
///   Before they record anything that names items, they call `makeDurable` with those items
///   (through `DocumentBackend.makeDurable`): when one is among `unflushed`, one FULL commit
///   flushes the WAL, and with it every deferred commit before it (WAL frames reach the disk
///   in order). So no durable record outlives the node it names.
/// - The metadata cache is not fsynced at all; after a crash it is checked with the server,
///   which finds the file under a new number.
/// - A number a power cut took back must not be handed out again (a cache or the journal may
///   still hold it): at most `deferredLimit` nodes wait for the disk at a time (a deferred
///   commit beyond that waits for it), and every open moves the numbering on by
///   `skippedAtOpen`, more than that.
extension IdentityTable {
    /// How many nodes may wait for the disk at a time.
    static let deferredLimit = 256
    /// How far each open moves the numbering on (see the type's comment).
    static let skippedAtOpen: Int64 = 1024

    /// Runs `body` in a transaction whose commit waits for the disk: it flushes every
    /// deferred commit before it too.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try commit(deferring: nil, body)
    }

    /// Runs `body` in a transaction whose commit does not wait for the disk (synchronous=NORMAL
    /// for this one commit), unless `deferredLimit` nodes wait already; `made` tells which
    /// nodes the result made or changed, which wait for the disk from then on.
    func writeDeferringDurability<T>(of made: @escaping (T) -> [Node], _ body: (Database) throws -> T) throws -> T {
        try commit(deferring: made, body)
    }

    /// Makes every commit so far durable when one of `nodes` waits for the disk; nothing to
    /// do (and no write) otherwise. Called before a record that names them is made durable
    /// elsewhere (see the type's comment).
    public func makeDurable(_ nodes: some Sequence<Node>) throws {
        guard unflushed.withLock({ waiting in !waiting.isEmpty && nodes.contains(where: waiting.contains) }) else { return }
        try write { db in
            try db.cachedStatement(sql: "INSERT INTO probe VALUES (1)").execute()
            try db.cachedStatement(sql: "DELETE FROM probe").execute()
        }
    }

    /// The nodes whose last commit has not reached the disk yet (tests).
    public var nodesWaitingForTheDisk: Set<Node> { unflushed.withLock { $0 } }

    /// The connection's `PRAGMA synchronous` (2: FULL, what every commit has unless it says
    /// otherwise).
    func synchronousSetting() throws -> Int {
        try queue.inDatabase { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Moves the numbering on past any number a power cut may have taken back (see the type's
    /// comment). A table that never numbered a node has nothing to skip.
    static func skipNumbersAPowerCutMayHaveTaken(_ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'nodes'").execute(arguments: [skippedAtOpen])
    }

    /// One transaction of `body`, deferred when `made` is given and fewer than
    /// `deferredLimit` nodes wait. What waits changes inside the queue's turn, so no other
    /// caller can see a node before it is among `unflushed`: a commit that waited for the
    /// disk and changed a row (one that changed none wrote and flushed nothing) empties it;
    /// a deferred one adds what it made. The setting is back to FULL before anything else
    /// runs on the connection; a failure to set it is thrown like a failed commit.
    private func commit<T>(deferring made: ((T) -> [Node])?, _ body: (Database) throws -> T) throws -> T {
        try queue.writeWithoutTransaction { db in
            let deferred = made != nil && unflushed.withLock { $0.count < Self.deferredLimit }
            let changesBefore = db.totalChangesCount
            var value: T?
            func transaction() throws {
                try db.inTransaction {
                    value = try body(db)
                    return .commit
                }
            }
            if deferred {
                try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
                let committed = Result { try transaction() }
                try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute()
                try committed.get()
            } else {
                try transaction()
            }
            guard let value else { throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a transaction returned no value") }
            if db.totalChangesCount != changesBefore {
                unflushed.withLock { waiting in
                    if deferred, let made { waiting.formUnion(made(value)) } else { waiting.removeAll() }
                }
            }
            return value
        }
    }
}
