import Foundation
import GRDB
import Logging
import SitefsAPI
import SitefsProvider
import Synchronization

/// The metadata cache on disk (`CACHE_DIR/metadata.sqlite`, SQLite WAL through GRDB):
/// items, folder listings and the change-feed cursor, so a remount starts warm. It mirrors
/// `ItemCache`; writes are queued to a background queue in order, so listing a folder never
/// waits for the disk, and what piles up within `batchDelay` is written in one transaction:
/// on 2 cores, writing each page as it came took CPU from the server mid-listing (a fifth
/// of the daemon's CPU in a cold `ls -l` of 10,000 files). Losing it loses nothing but a
/// cold start, so it is not fsynced per commit (synchronous=NORMAL).
public final class MetadataDatabase: Sendable {
    private let queue: DatabaseQueue
    private let writes = DispatchQueue(label: "sitefs.metadata-writes")
    private static let batchDelay = 0.3
    /// Writes not yet taken by the background queue (taken all at once).
    private let pending = Mutex<(work: [@Sendable (Database) throws -> Void], scheduled: Bool)>(([], false))
    private let logger: Logger
    /// Whether the last mount of this cache ended cleanly: everything it knew written, with
    /// nothing after (`markCleanShutdown`). The mark is taken away at open, so a run that is
    /// killed leaves none. After a kill the cache may lag the upload journal by the last
    /// writes (a rename the server confirmed and the journal dropped, its new name not yet
    /// written here), so it must not be trusted as current.
    public let lastRunEndedCleanly: Bool
    private static let cleanShutdownKey = "clean_shutdown"

    public init(path: String, logger: Logger) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // Outside any transaction, which is the only place SQLite accepts it.
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        self.logger = logger
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE items (
                    site TEXT NOT NULL, id TEXT NOT NULL, parent TEXT, name TEXT NOT NULL, kind TEXT NOT NULL,
                    size INTEGER NOT NULL, created INTEGER NOT NULL, modified INTEGER NOT NULL,
                    created_by TEXT NOT NULL, modified_by TEXT NOT NULL, version TEXT NOT NULL, capabilities TEXT NOT NULL,
                    PRIMARY KEY (site, id)
                );
                CREATE TABLE listings (
                    folder_site TEXT NOT NULL, folder_id TEXT NOT NULL, position INTEGER NOT NULL,
                    name TEXT NOT NULL, child_id TEXT NOT NULL,
                    PRIMARY KEY (folder_site, folder_id, position)
                );
                CREATE INDEX listings_by_child ON listings(folder_site, folder_id, child_id);
                CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("v2: modes and symbolic links") { db in
            try db.execute(sql: """
                ALTER TABLE items ADD COLUMN mode INTEGER;
                ALTER TABLE items ADD COLUMN symlink_target BLOB;
                """)
        }
        try migrator.migrate(queue)
        lastRunEndedCleanly = try queue.write { db in
            let found = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM state WHERE key = ?"), arguments: [Self.cleanShutdownKey]) != nil
            try db.cachedStatement(sql: "DELETE FROM state WHERE key = ?").execute(arguments: [Self.cleanShutdownKey])
            return found
        }
    }

    // MARK: Loading (at mount)

    public func loadItems() -> [ProviderItem] {
        (try? queue.read { db in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM items")).compactMap(Self.item(from:)) }) ?? []
    }

    /// Listings by folder. The root's key is `ItemCache.root`.
    public func loadListings() -> [ItemIdentifier: ItemCache.Listing] {
        let rows = (try? queue.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM listings ORDER BY folder_site, folder_id, position"))
        }) ?? []
        var listings: [ItemIdentifier: ItemCache.Listing] = [:]
        for row in rows {
            let folder = ItemIdentifier(site: row["folder_site"], id: row["folder_id"])
            let child: String = row["child_id"]
            if row["position"] == Self.knownListingPosition {
                // An empty folder is a listing too: offline, `ls` of it must not need the server.
                listings[folder] = listings[folder] ?? ItemCache.Listing(names: [], identifiers: [])
                continue
            }
            // Root entries are sites: their identifier is (id, id).
            let site = folder == ItemCache.root ? child : folder.site
            var listing = listings[folder] ?? ItemCache.Listing(names: [], identifiers: [])
            listing.names.append(row["name"])
            listing.identifiers.append(ItemIdentifier(site: site, id: child))
            listings[folder] = listing
        }
        return listings
    }

    /// The position of the row that marks a folder's listing as known (it comes first, and
    /// stands for no entry), so an empty listing survives a restart.
    static let knownListingPosition = -1

    public func value(for key: String) -> String? {
        try? queue.read { db in try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM state WHERE key = ?"), arguments: [key]) }
    }

    // MARK: Writing (in the background, in order)

    public func save(_ items: [ProviderItem]) {
        enqueue { db in
            var insert = try BulkInsert(db, sql: """
                INSERT OR REPLACE INTO items (site, id, parent, name, kind, size, created, modified, created_by,
                                              modified_by, version, capabilities, mode, symlink_target)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            // Each set of capabilities spelled once per batch, not once per item.
            var spelled: [Capabilities: String] = [:]
            for item in items {
                let capabilities = spelled[item.capabilities] ?? Self.spelled(item.capabilities)
                spelled[item.capabilities] = capabilities
                insert.bind(item.identifier.site)
                insert.bind(item.identifier.id)
                insert.bind(item.parent?.id)
                insert.bind(item.name)
                insert.bind(Self.kindName(item.kind))
                insert.bind(item.size)
                insert.bind(item.created.microseconds)
                insert.bind(item.modified.microseconds)
                insert.bind(item.createdBy)
                insert.bind(item.modifiedBy)
                insert.bind(item.version)
                insert.bind(capabilities)
                insert.bind(item.mode.map { Int64($0) })
                insert.bind(item.symlinkTarget)
                try insert.insertRow()
            }
        }
    }

    public func saveListing(_ listing: ItemCache.Listing, of folder: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM listings WHERE folder_site = ? AND folder_id = ?").execute(arguments: [folder.site, folder.id])
            var insert = try BulkInsert(db, sql: "INSERT INTO listings VALUES (?, ?, ?, ?, ?)")
            func insertEntry(at position: Int, named name: String, child: String) throws {
                insert.bind(folder.site)
                insert.bind(folder.id)
                insert.bind(Int64(position))
                insert.bind(name)
                insert.bind(child)
                try insert.insertRow()
            }
            // The marker says the listing is known even when it has no entry.
            try insertEntry(at: Self.knownListingPosition, named: "", child: "")
            for (position, (name, child)) in zip(listing.names, listing.identifiers).enumerated() {
                try insertEntry(at: position, named: name, child: child.id)
            }
        }
    }

    public func appendEntry(_ child: ItemIdentifier, named name: String, to folder: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: """
                INSERT INTO listings SELECT ?, ?, COALESCE(MAX(position), -1) + 1, ?, ?
                FROM listings WHERE folder_site = ? AND folder_id = ?
                """).execute(arguments: [folder.site, folder.id, name, child.id, folder.site, folder.id])
        }
    }

    public func renameEntry(_ child: ItemIdentifier, to name: String, in folder: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: "UPDATE listings SET name = ? WHERE folder_site = ? AND folder_id = ? AND child_id = ?").execute(
                           arguments: [name, folder.site, folder.id, child.id])
        }
    }

    public func removeEntry(_ child: ItemIdentifier, from folder: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM listings WHERE folder_site = ? AND folder_id = ? AND child_id = ?").execute(
                           arguments: [folder.site, folder.id, child.id])
        }
    }

    public func forgetListing(of folder: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM listings WHERE folder_site = ? AND folder_id = ?").execute(arguments: [folder.site, folder.id])
        }
    }

    public func remove(_ identifier: ItemIdentifier) {
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM items WHERE site = ? AND id = ?").execute(arguments: [identifier.site, identifier.id])
            try db.cachedStatement(sql: "DELETE FROM listings WHERE folder_site = ? AND folder_id = ?").execute(arguments: [identifier.site, identifier.id])
        }
    }

    public func setValue(_ value: String, for key: String) {
        enqueue { db in try db.cachedStatement(sql: "INSERT OR REPLACE INTO state VALUES (?, ?)").execute(arguments: [key, value]) }
    }

    /// Writes what is queued now and waits until it is written: at unmount, and where the
    /// journal has let go of what the cache must now remember (see `SitefsFilesystem.apply`).
    public func flush() {
        writes.sync { writePending() }
    }

    /// Everything is written and the mount is over: the next mount may trust this cache.
    public func markCleanShutdown() {
        writes.sync {
            writePending()
            do {
                try queue.write { db in
                    try db.cachedStatement(sql: "INSERT OR REPLACE INTO state VALUES (?, '1')").execute(arguments: [Self.cleanShutdownKey])
                }
            } catch {
                logger.warning("cannot mark the metadata cache complete (the next mount will check it with the server): \(error)")
            }
        }
    }

    private func enqueue(_ work: @escaping @Sendable (Database) throws -> Void) {
        let schedule = pending.withLock { pending -> Bool in
            pending.work.append(work)
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        writes.asyncAfter(deadline: .now() + Self.batchDelay) { [self] in writePending() }
    }

    /// Runs on `writes` only, so batches keep their order.
    private func writePending() {
        let batch = pending.withLock { pending -> [@Sendable (Database) throws -> Void] in
            defer { pending = ([], false) }
            return pending.work
        }
        guard !batch.isEmpty else { return }
        do {
            try queue.write { db in
                // Anything written after the mark makes it untrue.
                try db.cachedStatement(sql: "DELETE FROM state WHERE key = ?").execute(arguments: [Self.cleanShutdownKey])
                for work in batch { try work(db) }
            }
        } catch {
            logger.warning("metadata cache write failed (a remount will start colder): \(error)")
        }
    }

    /// Capabilities as stored: their names, sorted, comma-separated.
    private static func spelled(_ capabilities: Capabilities) -> String {
        capabilities.list.map(\.rawValue).sorted().joined(separator: ",")
    }

    private static func kindName(_ kind: ProviderItem.Kind) -> String {
        switch kind {
        case .site: return "site"
        case .folder: return "folder"
        case .file: return "file"
        case .symlink: return "symlink"
        }
    }

    private static func item(from row: Row) -> ProviderItem? {
        let kind: ProviderItem.Kind
        switch row["kind"] as String {
        case "site": kind = .site
        case "folder": kind = .folder
        case "file": kind = .file
        case "symlink": kind = .symlink
        default: return nil
        }
        let site: String = row["site"]
        let capabilities = (row["capabilities"] as String).split(separator: ",").compactMap { Capability(rawValue: String($0)) }
        return ProviderItem(
            identifier: ItemIdentifier(site: site, id: row["id"]),
            parent: (row["parent"] as String?).map { ItemIdentifier(site: site, id: $0) },
            name: row["name"], kind: kind, size: row["size"],
            created: Timestamp(microsecondsSinceEpoch: row["created"]), modified: Timestamp(microsecondsSinceEpoch: row["modified"]),
            createdBy: row["created_by"], modifiedBy: row["modified_by"], version: row["version"], capabilities: Capabilities(capabilities),
            mode: (row["mode"] as Int64?).flatMap { UInt16(exactly: $0) }.map { $0 & ProviderItem.permissionBits },
            symlinkTarget: (row["symlink_target"] as Data?).map { [UInt8]($0) }.flatMap {
                ProviderItem.isValidSymlinkTarget($0) ? $0 : nil
            })
    }
}
