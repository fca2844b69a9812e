import Foundation
import GRDB
import SitefsAPI
import SitefsProvider
import SitefsStore
import Synchronization

/// The durable record of saves not yet confirmed by the server (`CACHE_DIR/journal.sqlite`,
/// WAL, synchronous=FULL). A save is committed here before close()/fsync() return, after its
/// snapshot was fsynced, or with a small snapshot's bytes in the row (`SaveJob.content`); a
/// row goes away only when the server confirmed that content. A
/// mount started on the same cache dir resumes from it, so an edit survives `kill -9`, a
/// reboot and a server outage. Deletes and rmdirs are kept as POSIX keeps them: through
/// `kill -9` at once, through a power cut once their folder is fsynced (`record(_:)`).
///
/// Its statements are compiled once per connection and kept (`cachedStatement`): a folder of
/// 1,000 new files or deletes runs the same few statements thousands of times, and compiling
/// each again (SQLite's parser, GRDB's authorizer) cost more than running it. A write of one
/// statement runs without GRDB's transaction around it (`writeWithoutTransaction`): SQLite
/// commits it by itself, as durably, without compiling BEGIN and COMMIT for it.
///
/// Every write throws when it cannot commit (disk full, I/O error, a read-only file): the
/// uploader decides the consequence (see `Uploader.write(_:)` and `JournalWrite`).
///
/// A write that names items asks the backend first to make what it keeps of them durable
/// (`backendDurable`, `DocumentBackend.makeDurable`): a WebDAV mount's number for a file it
/// just created is not fsynced at once, and a row that names it must not outlive it.
final class UploadJournal: Sendable {
    private let queue: DatabaseQueue
    /// `DocumentBackend.makeDurable` of the mount's backend; a throw fails the write as a
    /// failed commit would.
    private let backendDurable: @Sendable ([ItemIdentifier]) throws -> Void
    /// Commits made without waiting for the disk since the last flushed one: what `flush()`
    /// has to make durable (none: it has nothing to do). Changed only inside the queue's
    /// writes (`write(flushed:_:)`, `flush()`), which are serial; read by tests.
    private let unflushed = Mutex(0)

    /// Throws `JournalUnwritable` when the journal cannot be opened and written (a
    /// read-only file or filesystem, a full disk): a mount whose every save would fail must
    /// not start.
    init(path: String, backendDurable: @escaping @Sendable ([ItemIdentifier]) throws -> Void) throws {
        self.backendDurable = backendDurable
        do {
            queue = try Self.openWritable(path)
        } catch {
            throw JournalUnwritable(path: path, underlying: error)
        }
    }

    private static func openWritable(_ path: String) throws -> DatabaseQueue {
        let queue = try DurableDatabase.open(path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE jobs (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    staged_path TEXT NOT NULL UNIQUE,
                    site TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, parent TEXT,
                    size INTEGER NOT NULL, base_version TEXT, modified INTEGER,
                    failure TEXT
                );
                CREATE TABLE uploaded (
                    site TEXT NOT NULL, id TEXT NOT NULL, base_version TEXT, result TEXT NOT NULL,
                    PRIMARY KEY (site, id)
                );
                """)
        }
        migrator.registerMigration("v2: deferred renames") { db in
            try db.execute(sql: """
                CREATE TABLE renames (
                    site TEXT NOT NULL, id TEXT NOT NULL, name TEXT NOT NULL, parent TEXT NOT NULL,
                    server_name TEXT NOT NULL, server_parent TEXT NOT NULL,
                    PRIMARY KEY (site, id)
                );
                """)
        }
        migrator.registerMigration("v3: deletes in progress") { db in
            try db.execute(sql: "CREATE TABLE deletes (site TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (site, id))")
        }
        migrator.registerMigration("v4: namespace operations made offline") { db in
            try db.execute(sql: """
                CREATE TABLE operations (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL, site TEXT NOT NULL, id TEXT NOT NULL,
                    name TEXT NOT NULL, parent TEXT, base_version TEXT
                );
                CREATE TABLE made_folders (
                    site TEXT NOT NULL, local_id TEXT NOT NULL, server_id TEXT NOT NULL,
                    PRIMARY KEY (site, local_id)
                );
                ALTER TABLE renames ADD COLUMN after_operation INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v5: where each save's and mkdir's folder stood") { db in
            try db.execute(sql: """
                ALTER TABLE jobs ADD COLUMN folders TEXT;
                ALTER TABLE operations ADD COLUMN folders TEXT;
                """)
        }
        migrator.registerMigration("v6: a table to prove the journal writable") { db in
            try db.execute(sql: "CREATE TABLE probe (x INTEGER)")
        }
        migrator.registerMigration("v7: modes and symbolic links") { db in
            try db.execute(sql: """
                ALTER TABLE operations ADD COLUMN mode INTEGER;
                ALTER TABLE operations ADD COLUMN target BLOB;
                ALTER TABLE jobs ADD COLUMN mode INTEGER;
                """)
        }
        migrator.registerMigration("v8: small snapshots kept in their row") { db in
            try db.execute(sql: "ALTER TABLE jobs ADD COLUMN content BLOB")
        }
        migrator.registerMigration("v9: no versions of local identifiers") { db in
            // What a new file's create produced was kept under the identifier it had only
            // until then (see `confirm`): one row per file ever made, never read.
            try db.execute(sql: "DELETE FROM uploaded WHERE substr(id, 1, ?) = ?",
                           arguments: [ItemIdentifier.localPrefix.utf8.count, ItemIdentifier.localPrefix])
        }
        try migrator.migrate(queue)
        // A journal can open and still refuse writes (a read-only file): proved writable here.
        try queue.write { db in try writeProbe(in: db) }
        return queue
    }

    /// A row of `probe` comes and goes: a write that changes nothing the journal holds but
    /// still writes a page, so its commit proves the file writable, or flushes the WAL.
    private static func writeProbe(in db: Database) throws {
        try db.cachedStatement(sql: "INSERT INTO probe VALUES (1)").execute()
        try db.cachedStatement(sql: "DELETE FROM probe").execute()
    }

    /// The journal at `path` cannot be written.
    struct JournalUnwritable: Error, CustomStringConvertible {
        let path: String
        let underlying: any Error
        var description: String {
            "the upload journal \(path) cannot be opened for writing (\(underlying)); saves could not be kept safe"
        }
    }

    /// A delete an earlier run recorded as on its way (`pendingDeletes`; runs before deletes
    /// were queued operations wrote these) is settled: its row goes.
    func clearDelete(_ identifier: ItemIdentifier) throws {
        try write(flushed: true) { db in
            try db.cachedStatement(sql: "DELETE FROM deletes WHERE site = ? AND id = ?").execute(arguments: [identifier.site, identifier.id])
        }
    }

    func pendingDeletes() throws -> [ItemIdentifier] {
        try queue.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT site, id FROM deletes")).map { ItemIdentifier(site: $0["site"], id: $0["id"]) }
        }
    }

    /// Commits a save (durable when this returns). A job recorded again for the same
    /// snapshot (a new file's save become a save of the file it replaced) keeps the row's
    /// content when it carries none: the queue's jobs never do.
    func record(_ job: Uploader.Job) throws {
        try makeDurable(naming: [job.identifier, job.parent], in: job.folders)
        try write(flushed: true) { db in try Self.insert(job, into: db) }
    }

    private static func insert(_ job: Uploader.Job, into db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO jobs (staged_path, site, id, name, parent, size, base_version, modified, failure, folders, mode,
                                             content)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, COALESCE(?, (SELECT content FROM jobs WHERE staged_path = ?)))
                """).execute(
            arguments: [job.stagedPath, job.identifier.site, job.identifier.id, job.name, job.parent?.id, job.size,
                        job.baseVersion, job.modified?.microseconds, job.folders?.encoded, job.mode.map { Int64($0) },
                        job.content.map { Data($0) }, job.stagedPath])
    }

    /// Forgets a save (replaced by a newer one of the same file, or moot).
    func drop(stagedPath: String) throws {
        try write(flushed: true) { db in try db.cachedStatement(sql: "DELETE FROM jobs WHERE staged_path = ?").execute(arguments: [stagedPath]) }
    }

    /// The server confirmed: the row goes, and what the upload turned into is remembered so
    /// that a save based on the same version is rebased onto ours (not for a new file's
    /// create: no save is based on it, and its local identifier is retired).
    /// `rekeyed`: a newer save of a file this confirmation created, now aimed at the server
    /// item; in the same transaction, so a crash cannot leave it a create of a file that exists.
    ///
    /// The confirmation of a save whose bytes are in its row (`contentInJournal`), without a
    /// follower, commits without waiting for the disk (synchronous=NORMAL for this one
    /// commit; the next FULL commit flushes it, as WAL frames reach the disk in order). A
    /// power cut that loses it loses nothing: the row comes back with its bytes, its
    /// snapshot is written again, and sending it again finds the server holding exactly
    /// those bytes, which a resumed save takes as its own upload (`UploadAttempt`).
    func confirmed(_ job: Uploader.Job, producing version: String, rekeyed follower: Uploader.Job? = nil) throws {
        try makeDurable(naming: [job.identifier, follower?.identifier])
        try write(flushed: !job.contentInJournal || follower != nil) { db in
            try db.inTransaction { try Self.confirm(job, version, follower, in: db) }
        }
    }

    /// The connection's `PRAGMA synchronous` (2: FULL, what every commit needs unless it
    /// says otherwise).
    func synchronousSetting() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Makes every commit so far durable: one FULL commit flushes the WAL, and with it the
    /// frames of every commit before it that did not wait for the disk (the deletes FUSE's
    /// fsyncdir asks to be kept). Its write is the probe's (`writeProbe`).
    func flush() throws {
        try queue.writeWithoutTransaction { db in
            guard unflushed.withLock({ $0 }) > 0 else { return }
            try db.inTransaction {
                try Self.writeProbe(in: db)
                return .commit
            }
            unflushed.withLock { $0 = 0 }
        }
    }

    /// Before a write that names `items` (and the folders of `chain`): what the backend keeps
    /// of them is durable first (see the type's comment). A row that goes names nothing new.
    private func makeDurable(naming items: [ItemIdentifier?], in chain: FolderChain? = nil) throws {
        let named = items.compactMap(\.self) + (chain?.links.map(\.identifier) ?? [])
        try backendDurable(named)
    }

    /// Commits not on the disk yet (see `flush()`).
    var unflushedCommits: Int { unflushed.withLock { $0 } }

    /// Every write of the journal: `body`'s commits with synchronous=FULL (`flushed`, each on
    /// the disk when it returns) or NORMAL (written to the WAL, which survives the daemon's
    /// death, but not flushed: the next FULL commit flushes them with its own, as WAL frames
    /// reach the disk in order; a power cut before then may lose them). A commit that
    /// changed no row wrote no page and flushed nothing. Setting the pragma touches no file;
    /// FULL is set again before anything else runs on the connection, and a failure to is
    /// thrown like a failed commit.
    private func write<T>(flushed: Bool, _ body: (Database) throws -> T) throws -> T {
        try queue.writeWithoutTransaction { db in
            let changesBefore = db.totalChangesCount
            guard !flushed else {
                let result = try body(db)
                if db.totalChangesCount != changesBefore { unflushed.withLock { $0 = 0 } }
                return result
            }
            try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
            let committed = Result { try body(db) }
            try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute()
            let result = try committed.get()
            if db.totalChangesCount != changesBefore { unflushed.withLock { $0 += 1 } }
            return result
        }
    }

    private static func confirm(_ job: Uploader.Job, _ version: String, _ follower: Uploader.Job?,
                                in db: Database) throws -> Database.TransactionCompletion {
        try db.cachedStatement(sql: "DELETE FROM jobs WHERE staged_path = ?").execute(arguments: [job.stagedPath])
        if !job.identifier.isLocal {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO uploaded VALUES (?, ?, ?, ?)").execute(
                           arguments: [job.identifier.site, job.identifier.id, job.baseVersion, version])
        }
        if let follower {
            try db.cachedStatement(sql: "UPDATE jobs SET id = ?, base_version = ? WHERE staged_path = ?").execute(
                           arguments: [follower.identifier.id, follower.baseVersion, follower.stagedPath])
        }
        return .commit
    }

    /// Where a save goes and whether it failed, as the uploader holds it now: a new file
    /// renamed before its upload is created under the new name; a failed save stays for
    /// `sitefs retry` (`failure` nil: queued again). The row keeps its place in the order.
    func update(_ job: Uploader.Job, failure: String?) throws {
        try makeDurable(naming: [job.identifier, job.parent], in: job.folders)
        try write(flushed: true) { db in
            try db.cachedStatement(sql: "UPDATE jobs SET name = ?, parent = ?, folders = ?, failure = ?, mode = ? WHERE staged_path = ?").execute(
                           arguments: [job.name, job.parent?.id, job.folders?.encoded, failure, job.mode.map { Int64($0) },
                                       job.stagedPath])
        }
    }

    /// Saves left by an earlier run, oldest first, with their failure if they had one; a
    /// small one with its content (`SaveJob.content`).
    func unfinished() throws -> [(Uploader.Job, failure: String?)] {
        try queue.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM jobs ORDER BY seq")).map { row in
                let site: String = row["site"]
                let job = Uploader.Job(
                    identifier: ItemIdentifier(site: site, id: row["id"]), name: row["name"],
                    parent: (row["parent"] as String?).map { ItemIdentifier(site: site, id: $0) },
                    stagedPath: row["staged_path"], size: row["size"], baseVersion: row["base_version"],
                    modified: (row["modified"] as Int64?).map(Timestamp.init(microsecondsSinceEpoch:)),
                    folders: FolderChain(encoded: row["folders"], site: site),
                    mode: (row["mode"] as Int64?).flatMap { UInt16(exactly: $0) }.map { $0 & ProviderItem.permissionBits },
                    content: (row["content"] as Data?).map { [UInt8]($0) })
                return (job, row["failure"])
            }
        }
    }

    func uploadedVersions() throws -> [ItemIdentifier: (base: String?, result: String)] {
        try queue.read { db in
            var result: [ItemIdentifier: (base: String?, result: String)] = [:]
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM uploaded")) {
                result[ItemIdentifier(site: row["site"], id: row["id"])] = (row["base_version"], row["result"])
            }
            return result
        }
    }

    // MARK: Deferred renames

    func recordRename(_ rename: Uploader.RenameJob) throws {
        try makeDurable(naming: [rename.identifier, rename.parent, rename.serverParent])
        try write(flushed: true) { db in
            try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO renames (site, id, name, parent, server_name, server_parent, after_operation)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """).execute(
                           arguments: [rename.identifier.site, rename.identifier.id, rename.name, rename.parent.id,
                                       rename.serverName, rename.serverParent.id, rename.afterOperation])
        }
    }

    func dropRename(_ identifier: ItemIdentifier) throws {
        try write(flushed: true) { db in
            try db.cachedStatement(sql: "DELETE FROM renames WHERE site = ? AND id = ?").execute(arguments: [identifier.site, identifier.id])
        }
    }

    func pendingRenames() throws -> [Uploader.RenameJob] {
        try queue.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM renames ORDER BY rowid")).map { row in
                let site: String = row["site"]
                var rename = Uploader.RenameJob(identifier: ItemIdentifier(site: site, id: row["id"]), name: row["name"],
                                                parent: ItemIdentifier(site: site, id: row["parent"]), serverName: row["server_name"],
                                                serverParent: ItemIdentifier(site: site, id: row["server_parent"]))
                rename.afterOperation = row["after_operation"]
                return rename
            }
        }
    }

    // MARK: Namespace operations made offline

    /// Commits an operation and gives it its place in the order. Durable when this returns,
    /// except a delete or rmdir (`Kind.removes`), which POSIX makes durable only once its
    /// folder is fsynced: it commits without waiting for the disk (see `write(flushed:_:)`),
    /// and fsyncdir (`flush()`) or the next save's commit flushes it. A power cut before that
    /// may lose it, and the file is shown again as the server still has it. (Flushed, an
    /// `rm -r` of 1,000 files would wait for 1,000 flushes, each under the uploader's lock.)
    func record(_ operation: NamespaceOperation) throws -> Int64 {
        try makeDurable(naming: [operation.identifier, operation.parent], in: operation.folders)
        return try write(flushed: !operation.kind.removes) { db in
            try db.cachedStatement(sql: """
                INSERT INTO operations (kind, site, id, name, parent, base_version, folders, mode, target)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(
                arguments: [operation.kind.rawValue, operation.identifier.site, operation.identifier.id,
                            operation.name, operation.parent?.id, operation.baseVersion, operation.folders?.encoded,
                            operation.mode.map { Int64($0) }, operation.target.map { Data($0) }])
            return db.lastInsertedRowID
        }
    }

    /// An operation not sent yet changed (a folder made here renamed before it went, or its
    /// parent now known on the server).
    func update(_ operation: NamespaceOperation) throws {
        try makeDurable(naming: [operation.identifier, operation.parent], in: operation.folders)
        try write(flushed: true) { db in
            try db.cachedStatement(sql: "UPDATE operations SET id = ?, name = ?, parent = ?, folders = ?, mode = ? WHERE seq = ?").execute(
                           arguments: [operation.identifier.id, operation.name, operation.parent?.id, operation.folders?.encoded,
                                       operation.mode.map { Int64($0) }, operation.sequence])
        }
    }

    /// Done (or dropped): the row goes; for a folder made here, what the server made of it is
    /// remembered in the same transaction, so saves and renames aimed at the local folder
    /// find it after a restart. A delete's or rmdir's row goes without waiting for the disk:
    /// one a power cut brings back is sent again and finds the item gone.
    func finished(_ operation: NamespaceOperation, madeFolder: ItemIdentifier? = nil) throws {
        try makeDurable(naming: [madeFolder])
        try write(flushed: !operation.kind.removes || madeFolder != nil) { db in
            try db.inTransaction {
                try db.cachedStatement(sql: "DELETE FROM operations WHERE seq = ?").execute(arguments: [operation.sequence])
                if let madeFolder {
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO made_folders VALUES (?, ?, ?)").execute(
                                   arguments: [operation.identifier.site, operation.identifier.id, madeFolder.id])
                }
                return .commit
            }
        }
    }

    /// Several operations finished together (an rmdir and the deletes it carried): their
    /// rows go in one commit, which does not wait for the disk when all are removals.
    func finished(_ operations: [NamespaceOperation]) throws {
        try write(flushed: !operations.allSatisfy(\.kind.removes)) { db in
            try db.inTransaction {
                let delete = try db.cachedStatement(sql: "DELETE FROM operations WHERE seq = ?")
                for operation in operations { try delete.execute(arguments: [operation.sequence]) }
                return .commit
            }
        }
    }

    /// Operations left by an earlier run, in order.
    func pendingOperations() throws -> [NamespaceOperation] {
        try queue.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM operations ORDER BY seq")).compactMap { row in
                let site: String = row["site"]
                guard let kind = NamespaceOperation.Kind(rawValue: row["kind"]) else { return nil }
                var operation = NamespaceOperation(kind: kind, identifier: ItemIdentifier(site: site, id: row["id"]),
                                                   name: row["name"],
                                                   parent: (row["parent"] as String?).map { ItemIdentifier(site: site, id: $0) },
                                                   baseVersion: row["base_version"],
                                                   folders: FolderChain(encoded: row["folders"], site: site),
                                                   mode: (row["mode"] as Int64?).flatMap { UInt16(exactly: $0) }
                                                       .map { $0 & ProviderItem.permissionBits },
                                                   target: (row["target"] as Data?).map { [UInt8]($0) })
                if kind == .setMode && operation.mode == nil { return nil }
                if kind == .makeSymlink && !ProviderItem.isValidSymlinkTarget(operation.target ?? []) { return nil }
                operation.sequence = row["seq"]
                return operation
            }
        }
    }

    /// Folders made here, by local identifier: the server's identifier for each.
    func madeFolders() throws -> [ItemIdentifier: ItemIdentifier] {
        try queue.read { db in
            var result: [ItemIdentifier: ItemIdentifier] = [:]
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM made_folders")) {
                let site: String = row["site"]
                result[ItemIdentifier(site: site, id: row["local_id"])] = ItemIdentifier(site: site, id: row["server_id"])
            }
            return result
        }
    }

    /// The highest sequence an operation was ever given (0 when none): renames are ordered
    /// after it.
    func lastOperationSequence() throws -> Int64 {
        try queue.read { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'operations'")) ?? 0
        }
    }
}
