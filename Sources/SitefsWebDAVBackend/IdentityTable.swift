import Foundation
import GRDB
import Synchronization

/// Stable local identifiers for a server that names its items by path.
///
/// A WebDAV server has no item ids (RFC 4918 names resources by URL), but the File Provider
/// model needs one that survives a rename: open files, the upload journal and the metadata
/// cache all hold identifiers, and a document renamed on the mount must still be the same
/// document. So this table gives every path seen a number, kept as a tree (parent, name),
/// which moves with its item: renaming a folder moves one row and its whole subtree with it.
/// Where the server offers a file id that survives renames (`oc:fileid`), it is recorded and
/// trusted over the path: an item renamed on the server keeps its number too.
///
/// Numbers are never reused (AUTOINCREMENT, and numbers a power cut may have taken back are
/// skipped): a number the cache or journal still holds for a deleted item must not come to
/// mean another one. The table lives in the mount's cache folder (`webdav-identities.sqlite`),
/// fsynced per transaction, since the upload journal refers to its numbers across a crash,
/// except the commit that records a file this mount just created: that one waits for the
/// next fsync, and whatever names such a node durably elsewhere makes it durable first (see
/// `IdentityTable+Durability.swift`). Names are compared as bytes (SQLite's BINARY
/// collation), so "café" in NFC and in NFD are two names, as they are to the server.
/// Every request resolves its item here, so statements are compiled once and kept
/// (`cachedStatement`), and lookups read outside a transaction (`inDatabase`: one SELECT
/// needs none, and GRDB's read-only transaction compiled four statements around it).
public final class IdentityTable: Sendable {
    public typealias Node = Int64
    /// The mount URL's own collection: the parent of the sites.
    public static let root: Node = 0
    /// How deep a path may be; a chain of parents longer than this is a corrupt table.
    static let maximumDepth = 256

    /// GRDB's serial queue: one transaction at a time, and nothing else is locked or called
    /// out to inside one but `placements` and `unflushed` (leaves), so any thread may use the
    /// table while holding other locks. Lock order: `queue`, then `placements` or `unflushed`.
    let queue: DatabaseQueue

    /// Nodes made or changed by commits that did not wait for the disk, until a commit that
    /// waited has flushed them (see `writeDeferringDurability`). A leaf lock.
    let unflushed = Mutex(Set<Node>())

    /// Listings under way, and the nodes placed in a folder (made or moved there by this
    /// mount) while one was: a listing whose PROPFIND began before a folder got a new child
    /// does not report the child, and must not prune it (see `prune`). Kept only while a
    /// listing is open, so it holds a few entries.
    private let placements = Mutex(Placements())

    private struct Placements {
        var next: UInt64 = 1
        /// Node -> the sequence number of its last placement.
        var placed: [Node: UInt64] = [:]
        /// The marks of the listings under way (a mark may be open more than once).
        var open: [UInt64: Int] = [:]
    }

    /// Where a listing began, in the order of placements (`beginListing`).
    public struct ListingMark: Sendable {
        fileprivate let sequence: UInt64
    }

    /// Opens (creating) the table at `path`; nil keeps it in memory (tests).
    public init(path: String?) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        queue = try path.map { try DatabaseQueue(path: $0, configuration: configuration) } ?? DatabaseQueue(configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE nodes (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    parent INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    file_id TEXT UNIQUE,
                    is_collection INTEGER NOT NULL DEFAULT 0,
                    kept_modified INTEGER,
                    kept_for_version TEXT,
                    UNIQUE (parent, name)
                );
                """)
        }
        // A mode set on the mount where the server keeps no properties (see `keep(mode:of:)`).
        migrator.registerMigration("v2-kept-mode") { db in
            try db.execute(sql: "ALTER TABLE nodes ADD COLUMN kept_mode INTEGER")
        }
        // An upload's own version, until the server's tag for it is known (see `UploadTag`).
        migrator.registerMigration("v3-upload-tags") { db in
            for column in ["put_version TEXT", "put_size INTEGER", "put_earliest INTEGER", "put_latest INTEGER", "put_tag TEXT"] {
                try db.execute(sql: "ALTER TABLE nodes ADD COLUMN \(column)")
            }
        }
        // A row comes and goes to flush the deferred commits (see `makeDurable`).
        migrator.registerMigration("v4-probe") { db in
            try db.execute(sql: "CREATE TABLE probe (x INTEGER)")
        }
        try migrator.migrate(queue)
        try write { db in try Self.skipNumbersAPowerCutMayHaveTaken(db) }
    }

    /// One child as a listing reports it.
    public struct Sighting: Sendable {
        public var name: String
        public var isCollection: Bool
        public var fileID: String?
        /// The server's version of it, to find a modification time kept for that version.
        public var version: String?
        /// The content's size and modification time (seconds) as reported, to tell whether a
        /// tag is an upload's own (see `UploadTag`).
        public var size: Int64?
        public var seconds: Int64?
        /// A modification time to keep for `version` from now on (see `keep(modified:of:version:)`):
        /// an upload's time the server did not store, written with the sighting in one commit.
        public var keepModified: Int64?
        /// An upload this mount just made of the item, answered without a tag: its version
        /// is the item's from now on (see `UploadTag`), written with the sighting in one commit.
        var upload: UploadTag?
        public init(name: String, isCollection: Bool, fileID: String? = nil, version: String? = nil, size: Int64? = nil,
                    seconds: Int64? = nil, keepModified: Int64? = nil) {
            self.name = name
            self.isCollection = isCollection
            self.fileID = fileID
            self.version = version
            self.size = size
            self.seconds = seconds
            self.keepModified = keepModified
        }
    }

    /// A sighting's number, the modification time kept for its version (see `keep`), the
    /// mode kept for it (see `keep(mode:of:)`), and the version to show when it is not the
    /// sighting's: an upload's own, while the server holds what it stored (see `UploadTag`).
    public struct Resolved: Sendable, Equatable {
        public var node: Node
        public var keptModified: Int64?
        public var keptMode: UInt16?
        public var version: String?
        public init(node: Node, keptModified: Int64?, keptMode: UInt16? = nil, version: String? = nil) {
            self.node = node
            self.keptModified = keptModified
            self.keptMode = keptMode
            self.version = version
        }
    }

    /// The numbers of `children` of `parent`, made where new, in one transaction (a listing
    /// page: one commit for the lot). An item seen as before costs one indexed lookup and no
    /// write: listings of large folders come here 100,000 times.
    ///
    /// `likelyNew`: the children are probably not in the table yet (their folder had none
    /// when its listing began, see `hasChildren`). Each is then added first and looked up
    /// only when its name is there already, which costs one statement an entry on a first
    /// listing where looking up first costs two. The numbers are the same either way.
    /// `listed`: the children come from a listing of `parent`, which keeps what it reports;
    /// otherwise they are this mount's own (what a PUT or MKCOL made), placed now.
    public func nodes(for children: [Sighting], in parent: Node, likelyNew: Bool = false, listed: Bool = false) throws -> [Resolved] {
        try write { db in try resolved(children, in: parent, likelyNew: likelyNew, listed: listed, db) }
    }

    /// As `nodes(for:in:)`, for files this mount has just created: the commit does not wait
    /// for the disk (see `writeDeferringDurability`); their nodes are made durable before
    /// anything names them durably (`makeDurable`).
    public func nodesOfCreatedFiles(_ children: [Sighting], in parent: Node) throws -> [Resolved] {
        try writeDeferringDurability(of: { $0.map(\.node) }) { db in
            try resolved(children, in: parent, likelyNew: false, listed: false, db)
        }
    }

    private func resolved(_ children: [Sighting], in parent: Node, likelyNew: Bool, listed: Bool, _ db: Database) throws -> [Resolved] {
        let insert = likelyNew ? try NewChildInsert(db) : nil
        let resolved = try children.map { try Self.resolved($0, in: parent, inserting: insert, db) }
        if !listed { notePlaced(resolved.map(\.node)) }
        return resolved
    }

    /// Whether `parent` has any child in the table (a folder never listed has none).
    public func hasChildren(_ parent: Node) throws -> Bool {
        try queue.inDatabase { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM nodes WHERE parent = ?)"), arguments: [parent]) ?? false
        }
    }

    public func node(for sighting: Sighting, in parent: Node) throws -> Node {
        try write { db in
            let node = try Self.node(for: sighting, in: parent, db)
            notePlaced([node])
            return node
        }
    }

    /// The number of an existing child, or nil.
    public func existingNode(named name: String, in parent: Node) throws -> Node? {
        try queue.inDatabase { db in
            try Node.fetchOne(db.cachedStatement(sql: "SELECT id FROM nodes WHERE parent = ? AND name = ?"), arguments: [parent, name])
        }
    }

    private static func node(for sighting: Sighting, in parent: Node, _ db: Database) throws -> Node {
        try resolved(sighting, in: parent, db).node
    }

    /// `insert`: the children are likely new (see `nodes`), so each is added first.
    private static func resolved(_ sighting: Sighting, in parent: Node, inserting insert: NewChildInsert? = nil,
                                 _ db: Database) throws -> Resolved {
        var resolved = try insert.flatMap { try added(sighting, in: parent, with: $0) } ?? found(sighting, in: parent, db)
        if let upload = sighting.upload {
            try db.cachedStatement(sql: """
                UPDATE nodes SET put_version = ?, put_size = ?, put_earliest = ?, put_latest = ?, put_tag = NULL WHERE id = ?
                """).execute(arguments: [upload.version, upload.size, upload.seconds.lowerBound, upload.seconds.upperBound, resolved.node])
            resolved.version = upload.version
        }
        if let keep = sighting.keepModified, let version = resolved.version ?? sighting.version {
            try db.cachedStatement(sql: "UPDATE nodes SET kept_modified = ?, kept_for_version = ? WHERE id = ?").execute(
                           arguments: [keep, version, resolved.node])
            resolved.keptModified = keep
        }
        return resolved
    }

    /// The sighting's new node, when its name is not in `parent` yet and the server gives
    /// no file id (with one, it may be an item seen elsewhere before: `found` sorts that
    /// out); nil otherwise, without a change.
    private static func added(_ sighting: Sighting, in parent: Node, with insert: NewChildInsert) throws -> Resolved? {
        guard sighting.fileID == nil else { return nil }
        return try insert.insert(named: sighting.name, isCollection: sighting.isCollection, in: parent).map {
            Resolved(node: $0, keptModified: nil, keptMode: nil)
        }
    }

    /// The sighting's node as the table has it (made when new), with what is kept for it.
    private static func found(_ sighting: Sighting, in parent: Node, _ db: Database) throws -> Resolved {
        // Columns by position (this runs once per listed entry): id, file_id, is_collection,
        // kept_modified, kept_for_version, kept_mode, then an upload's (see `upload(in:)`).
        let here = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT id, file_id, is_collection, kept_modified, kept_for_version, kept_mode,
                   put_version, put_size, put_earliest, put_latest, put_tag FROM nodes WHERE parent = ? AND name = ?
            """), arguments: [parent, sighting.name])
        if let here, sighting.fileID == nil || sighting.fileID == here[1] as String? {
            // Known, as it was: the common case.
            let node: Node = here[0]
            if here[2] as Bool != sighting.isCollection {
                try db.cachedStatement(sql: "UPDATE nodes SET is_collection = ? WHERE id = ?").execute(arguments: [sighting.isCollection, node])
            }
            let shown = try judge(upload(in: here), of: node, sighting, db)
            let version = shown ?? sighting.version
            let keptFor: String? = here[4]
            return Resolved(node: node, keptModified: version != nil && keptFor == version ? here[3] : nil,
                            keptMode: Self.mode(here[5]), version: shown)
        }
        if here == nil, sighting.fileID == nil {
            // Never seen (every entry of a first listing): one row, with nothing kept for it.
            try db.cachedStatement(sql: "INSERT INTO nodes (parent, name, is_collection) VALUES (?, ?, ?)")
                .execute(arguments: [parent, sighting.name, sighting.isCollection])
            return Resolved(node: db.lastInsertedRowID, keptModified: nil, keptMode: nil)
        }
        let node = try resolve(sighting, in: parent, here: here, db)
        try db.cachedStatement(sql: "UPDATE nodes SET is_collection = ? WHERE id = ?").execute(arguments: [sighting.isCollection, node])
        let shown = try judge(upload(of: node, db), of: node, sighting, db)
        let kept = try (shown ?? sighting.version).flatMap { version in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT kept_modified FROM nodes WHERE id = ? AND kept_for_version = ?"),
                               arguments: [node, version])
        }
        let mode = try Int64.fetchOne(db.cachedStatement(sql: "SELECT kept_mode FROM nodes WHERE id = ?"), arguments: [node])
        return Resolved(node: node, keptModified: kept, keptMode: Self.mode(mode), version: shown)
    }

    /// A stored mode, if it is one (the file is the mount's, but a value is checked all the same).
    private static func mode(_ value: Int64?) -> UInt16? {
        value.flatMap { (0...0o7777).contains($0) ? UInt16($0) : nil }
    }

    private static func resolve(_ sighting: Sighting, in parent: Node, here: Row?, _ db: Database) throws -> Node {
        guard let fileID = sighting.fileID else {
            if let here { return here["id"] }
            return try insert(sighting, in: parent, db)
        }
        if let known = try Node.fetchOne(db.cachedStatement(sql: "SELECT id FROM nodes WHERE file_id = ?"), arguments: [fileID]) {
            // The server's id says which item this is, wherever it was seen before.
            if let here, here["id"] as Node != known { try removeSubtree(here["id"], db) }
            try db.cachedStatement(sql: "UPDATE nodes SET parent = ?, name = ? WHERE id = ?").execute( arguments: [parent, sighting.name, known])
            return known
        }
        if let here {
            let hereFileID: String? = here["file_id"]
            if hereFileID == nil {
                try db.cachedStatement(sql: "UPDATE nodes SET file_id = ? WHERE id = ?").execute( arguments: [fileID, here["id"] as Node])
                return here["id"]
            }
            // Another item now has this name: the old one was deleted or moved away.
            try removeSubtree(here["id"], db)
        }
        return try insert(sighting, in: parent, db)
    }

    private static func insert(_ sighting: Sighting, in parent: Node, _ db: Database) throws -> Node {
        try db.cachedStatement(sql: "INSERT INTO nodes (parent, name, file_id) VALUES (?, ?, ?)")
            .execute(arguments: [parent, sighting.name, sighting.fileID])
        return db.lastInsertedRowID
    }

    /// Where a node is on the server.
    public struct Location: Sendable, Equatable {
        /// Names below the mount URL, outermost first.
        public var components: [String]
        public var isCollection: Bool
        /// The node of the outermost collection on the way: the site the node is in.
        public var site: Node
        /// The collection it is in (`root` for a site).
        public var parent: Node
    }

    /// Where `node` is below the mount URL; nil for a number this table does not know (never
    /// made, or removed since).
    public func location(of node: Node) throws -> Location? {
        guard node != Self.root else { return Location(components: [], isCollection: true, site: Self.root, parent: Self.root) }
        // Asked for every request the mount makes: one indexed lookup per level, up from the
        // node, with a statement compiled once, and nothing sorted. In one turn of the
        // queue, which runs every write too, so no move can tear the chain meanwhile.
        return try queue.inDatabase { db in
            let up = try db.cachedStatement(sql: "SELECT parent, name, is_collection FROM nodes WHERE id = ?")
            var names: [String] = []
            var current = node
            var parent = Self.root
            var isCollection = false
            var site = node
            while current != Self.root {
                // A chain that does not end at the root belongs to a removed folder, and one
                // longer than any path can be is a corrupt table.
                guard names.count <= Self.maximumDepth, let row = try Row.fetchOne(up, arguments: [current]) else { return nil }
                if current == node {
                    parent = row[0]
                    isCollection = row[2] as Bool? ?? false
                }
                names.append(row[1])
                site = current
                current = row[0]
            }
            return Location(components: names.reversed(), isCollection: isCollection, site: site, parent: parent)
        }
    }

    /// `node` now lives at `name` in `parent` (a MOVE the server did); whatever was there is
    /// gone (an overwrite).
    public func move(_ node: Node, to parent: Node, name: String) throws {
        try write { db in
            if let there = try Node.fetchOne(db.cachedStatement(sql: "SELECT id FROM nodes WHERE parent = ? AND name = ?"), arguments: [parent, name]),
               there != node {
                try Self.removeSubtree(there, db)
            }
            try db.cachedStatement(sql: "UPDATE nodes SET parent = ?, name = ? WHERE id = ?").execute( arguments: [parent, name, node])
            notePlaced([node])
        }
    }

    /// `node` and everything below it are gone from the server.
    public func remove(_ node: Node) throws {
        try write { db in try Self.removeSubtree(node, db) }
    }

    /// After a whole listing of `parent` that began at `mark`: children it did not report
    /// are gone, except those this mount placed there since the listing began (its PROPFIND
    /// may have been answered before they were on the server).
    public func prune(childrenOf parent: Node, keeping seen: Set<Node>, listedSince mark: ListingMark) throws {
        try write { db in
            let known = try Node.fetchAll(db.cachedStatement(sql: "SELECT id FROM nodes WHERE parent = ?"), arguments: [parent])
            let placedSince = placements.withLock { state in Set(state.placed.filter { $0.value >= mark.sequence }.keys) }
            for node in known where !seen.contains(node) && !placedSince.contains(node) { try Self.removeSubtree(node, db) }
        }
    }

    /// The children of `parent` with a name that starts with a dot which a listing that
    /// began at `mark` did not report and that were there before it began: what `prune`
    /// would take of them. (Names from "." up to "/", bytewise: a range of the index.)
    public func unreportedDotChildren(of parent: Node, keeping seen: Set<Node>, listedSince mark: ListingMark) throws -> [(node: Node, name: String)] {
        try queue.inDatabase { db in
            let known = try Row.fetchAll(db.cachedStatement(sql: "SELECT id, name FROM nodes WHERE parent = ? AND name >= '.' AND name < '/'"),
                                         arguments: [parent])
            let placedSince = placements.withLock { state in Set(state.placed.filter { $0.value >= mark.sequence }.keys) }
            return known.map { (node: $0[0] as Node, name: $0[1] as String) }
                .filter { !seen.contains($0.node) && !placedSince.contains($0.node) }
        }
    }

    /// Marks the start of a listing (before its request goes out); end it with `endListing`
    /// whatever its outcome.
    public func beginListing() -> ListingMark {
        placements.withLock { state in
            state.open[state.next, default: 0] += 1
            return ListingMark(sequence: state.next)
        }
    }

    public func endListing(_ mark: ListingMark) {
        placements.withLock { state in
            guard let count = state.open[mark.sequence] else { return }
            state.open[mark.sequence] = count > 1 ? count - 1 : nil
            // Placements older than every open listing matter to none.
            guard let oldest = state.open.keys.min() else { return state.placed.removeAll() }
            state.placed = state.placed.filter { $0.value >= oldest }
        }
    }

    /// Records placements while a listing is open (called inside the transaction that made
    /// them, so no prune can come between).
    private func notePlaced(_ nodes: [Node]) {
        placements.withLock { state in
            guard !state.open.isEmpty else { return }
            for node in nodes { state.placed[node] = state.next }
            state.next += 1
        }
    }

    private static func removeSubtree(_ node: Node, _ db: Database) throws {
        try db.execute(sql: """
            WITH RECURSIVE below(id, depth) AS (
                SELECT ?, 0
                UNION ALL
                SELECT nodes.id, below.depth + 1 FROM nodes JOIN below ON nodes.parent = below.id WHERE below.depth < ?
            )
            DELETE FROM nodes WHERE id IN (SELECT id FROM below)
            """, arguments: [node, maximumDepth])
    }

    // MARK: Modification times the server would not take

    /// Remembers a modification time set here that the server could not store, for as long
    /// as the server's version of the item is still `version`: `rsync -a` run twice then
    /// sees the times it set and transfers nothing the second time.
    public func keep(modified microseconds: Int64, of node: Node, version: String) throws {
        try write { db in
            try db.cachedStatement(sql: "UPDATE nodes SET kept_modified = ?, kept_for_version = ? WHERE id = ?").execute(
                           arguments: [microseconds, version, node])
        }
    }

    /// The time kept for `node` if the server still has `version` of it.
    public func keptModified(of node: Node, version: String) throws -> Int64? {
        try queue.inDatabase { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT kept_modified FROM nodes WHERE id = ? AND kept_for_version = ?"),
                               arguments: [node, version])
        }
    }

    // MARK: Modes the server would not keep

    /// Remembers (nil: forgets) the permission bits set on the mount for `node`, where the
    /// server keeps no dead properties. Kept with the node, so a rename or move done here
    /// carries it (and a folder's descendants theirs), a delete or a listing that no longer
    /// shows the item drops it, and it outlives the mount with the table.
    public func keep(mode: UInt16?, of node: Node) throws {
        try write { db in
            try db.cachedStatement(sql: "UPDATE nodes SET kept_mode = ? WHERE id = ?").execute( arguments: [mode.map { Int64($0) }, node])
        }
    }

    /// The mode kept for `node`, if any.
    public func keptMode(of node: Node) throws -> UInt16? {
        try queue.inDatabase { db in Self.mode(try Int64.fetchOne(db.cachedStatement(sql: "SELECT kept_mode FROM nodes WHERE id = ?"), arguments: [node])) }
    }
}
