import Foundation
import GRDB
import SitefsProvider
import Synchronization

/// What the user keeps on this device (`sitefs pin`), and which local copies hold exactly a
/// server version of a pinned file: `CACHE_DIR/pins.sqlite` (WAL, synchronous=FULL), mirrored
/// in memory, so pins and their content survive an unmount, `kill -9` and a reboot.
///
/// A pin is on an item: a file, or a folder, which covers whatever is under it now or later
/// (the core walks an item's ancestors to ask). A kept record says that the local copy file
/// of an item is its server version `version`, `size` bytes, last changed at `changedAt`
/// (the file's mtime in nanoseconds): at the next mount the copy is trusted only if the file
/// still matches, so a crash between replacing the bytes and recording their version cannot
/// present one version's bytes as another's. A copy about to be written is forgotten here
/// first (`forgetKept`), and recorded again once the server confirmed its save. A record of
/// an item asks the backend first to make what it keeps of the item durable (see
/// `DocumentBackend.makeDurable`), so none outlives the item's number in a power cut.
public final class PinRegistry: Sendable {
    public struct Kept: Sendable, Equatable {
        public var version: String
        public var size: Int64
        public var changedAt: Int64

        public init(version: String, size: Int64, changedAt: Int64) {
            self.version = version
            self.size = size
            self.changedAt = changedAt
        }
    }

    private struct State {
        var pins: Set<ItemIdentifier> = []
        var kept: [ItemIdentifier: Kept] = [:]
    }

    private let queue: DatabaseQueue
    /// `DocumentBackend.makeDurable` of the mount's backend.
    private let backendDurable: @Sendable ([ItemIdentifier]) throws -> Void
    /// Lock order: a leaf. Changes are written to the database first, outside it, then here.
    private let state = Mutex(State())

    /// `path` nil: in memory only (tests of the engine that pin nothing).
    public init(path: String?, backendDurable: @escaping @Sendable ([ItemIdentifier]) throws -> Void) throws {
        self.backendDurable = backendDurable
        queue = try DurableDatabase.open(path)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE pins (site TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (site, id));
                CREATE TABLE kept (
                    site TEXT NOT NULL, id TEXT NOT NULL, version TEXT NOT NULL, size INTEGER NOT NULL,
                    changed_at INTEGER NOT NULL, PRIMARY KEY (site, id)
                );
                """)
        }
        try migrator.migrate(queue)
        let loaded = try queue.read { db in
            var loaded = State()
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT site, id FROM pins")) {
                loaded.pins.insert(ItemIdentifier(site: row["site"], id: row["id"]))
            }
            for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM kept")) {
                loaded.kept[ItemIdentifier(site: row["site"], id: row["id"])] =
                    Kept(version: row["version"], size: row["size"], changedAt: row["changed_at"])
            }
            return loaded
        }
        state.withLock { $0 = loaded }
    }

    /// The pins and the kept records as of one moment (copies share the registry's storage
    /// until it next changes, so reading them is cheap).
    public struct Pins: Sendable {
        /// The items pinned themselves (not through a folder).
        public var pinned: Set<ItemIdentifier>
        /// Per item, what its local copy holds.
        public var kept: [ItemIdentifier: Kept]
    }

    public var pins: Pins { state.withLock { Pins(pinned: $0.pins, kept: $0.kept) } }

    // MARK: Changes

    /// Durable when this returns.
    public func pin(_ identifier: ItemIdentifier) throws {
        try backendDurable([identifier])
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO pins VALUES (?, ?)").execute(arguments: [identifier.site, identifier.id])
        }
        state.withLock { _ = $0.pins.insert(identifier) }
    }

    public func unpin(_ identifier: ItemIdentifier) throws {
        try queue.write { db in
            try db.cachedStatement(sql: "DELETE FROM pins WHERE site = ? AND id = ?").execute(arguments: [identifier.site, identifier.id])
        }
        state.withLock { _ = $0.pins.remove(identifier) }
    }

    /// Records that the item's local copy is `kept` (its file fsynced by the caller first).
    public func keep(_ identifier: ItemIdentifier, _ kept: Kept) throws {
        try backendDurable([identifier])
        try queue.write { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO kept VALUES (?, ?, ?, ?, ?)").execute(
                           arguments: [identifier.site, identifier.id, kept.version, kept.size, kept.changedAt])
        }
        state.withLock { $0.kept[identifier] = kept }
    }

    /// The copy is about to change, or goes: durable when this returns. A no-op (no write)
    /// for an item with no record.
    public func forgetKept(_ identifier: ItemIdentifier) throws {
        guard state.withLock({ $0.kept[identifier] }) != nil else { return }
        try queue.write { db in
            try db.cachedStatement(sql: "DELETE FROM kept WHERE site = ? AND id = ?").execute(arguments: [identifier.site, identifier.id])
        }
        state.withLock { _ = $0.kept.removeValue(forKey: identifier) }
    }
}
