import Foundation
import SitefsAPI
import SitefsProvider
import SitefsStore
import SitefsSync
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Pins: what the user keeps on this device (File Provider's "keep downloaded", OneDrive's
/// "always keep on this device"). The engine keeps the pins and the record of which copies
/// hold a pinned file's server version (`PinRegistry`); the core keeps those copies: never
/// cleaned up on release, restored at mount, served when the server cannot be reached, and
/// downloaded and kept current in the background (`PinKeeper`).
extension SitefsFilesystem {
    /// How many folders up an item's pin is looked for (deeper trees are not pinned through a
    /// folder that far up; nothing real is that deep).
    static let maximumPinDepth = 256

    /// The pin that covers an item: its own, or the nearest pinned folder above it; nil when
    /// it is not pinned. Asked of what the mount knows (cache and the engine's namespace),
    /// never of the server; leaves only, so it may be asked under a copy's lock.
    func pinCovering(_ identifier: ItemIdentifier) -> ItemIdentifier? {
        if case .pinned(let pin) = pinning(of: identifier) { return pin }
        return nil
    }

    /// Whether a pin covers an item, as far as the mount knows its folders.
    enum Pinning {
        case pinned(by: ItemIdentifier)
        case notPinned
        /// A folder on the way up is not known here now (its metadata was dropped): whether
        /// a pin covers the item cannot be said, so its copy is kept until it can.
        case unknown
    }

    /// True only when no pin covers the item for sure (its copy may go).
    func isNotPinned(_ identifier: ItemIdentifier) -> Bool {
        if case .notPinned = pinning(of: identifier) { return true }
        return false
    }

    func pinning(of identifier: ItemIdentifier) -> Pinning {
        let pinned = sync.pins.pinned
        guard !pinned.isEmpty else { return .notPinned }
        var current: ItemIdentifier? = identifier
        for _ in 0..<Self.maximumPinDepth {
            guard let here = current else { return .notPinned }  // reached a site
            if pinned.contains(here) { return .pinned(by: here) }
            guard let item = knownItem(here) else { return .unknown }
            current = item.parent
        }
        return .notPinned
    }

    /// `sitefs pin`: the item (a whole folder with what comes under it later) is kept on this
    /// device from now on, within the cache budget (`--cache-size`), which is checked against
    /// what every pin needs with this one before it is recorded.
    func pin(_ inode: InodeNumber) throws(PinRefusal) -> PinAnswer {
        guard inode != .root else { throw PinRefusal(.invalidArgument, "pin a site or anything in one, not the mount root") }
        let item: ProviderItem
        do { item = try currentItem(try identifier(of: inode)) } catch { throw PinRefusal(error, "the item cannot be read") }
        guard !item.identifier.isLocal else {
            throw PinRefusal(.invalidArgument, "\(item.name) is not on the server yet; pin its folder instead")
        }
        let path = displayPath(of: item.identifier)
        if let limit = configuration.cacheSizeLimit {
            let needed: PinnedSet
            do { needed = try pinnedSet(adding: item.identifier) } catch { throw PinRefusal(error, "\(path) cannot be listed") }
            guard needed.bytes <= limit else {
                logger.warning("pin \(path): refused, pinned files would need \(needed.bytes) bytes, over the cache budget of \(limit)")
                throw PinRefusal(.noSpace, "pinned files would need \(ByteSize.format(needed.bytes)) with \(path), "
                                 + "over the cache budget (--cache-size) of \(ByteSize.format(limit))")
            }
        }
        do { try sync.changePins(.pin(item.identifier)) } catch {
            throw PinRefusal(.ioError, "the pin cannot be recorded: \(error)")
        }
        logger.info("pinned \(path)")
        keeper.request()
        return PinAnswer(path: path, pinned: true)
    }

    /// `sitefs unpin`: the item's content goes back to online-only once nothing holds it (a
    /// file still covered by a pinned folder above stays).
    func unpin(_ inode: InodeNumber) throws(PinRefusal) -> PinAnswer {
        guard inode != .root else { throw PinRefusal(.invalidArgument, "the mount root is never pinned") }
        let identifier: ItemIdentifier
        do { identifier = try self.identifier(of: inode) } catch { throw PinRefusal(error, "the item is gone") }
        let path = displayPath(of: identifier)
        do { try sync.changePins(.unpin(identifier)) } catch { throw PinRefusal(.ioError, "the pin cannot be removed: \(error)") }
        logger.info("unpinned \(path)")
        releaseUnpinnedCopies()
        keeper.request()
        return PinAnswer(path: path, pinned: pinCovering(identifier) != nil)
    }

    /// Local copies no pin covers any more, and nothing else holds, are cleaned up as on
    /// release; their records go.
    func releaseUnpinnedCopies() {
        for identifier in sync.pins.kept.keys {
            guard case .notPinned = pinning(of: identifier) else { continue }
            try? sync.changePins(.forgetKept(identifier))
            if let copy = copies.withLock({ $0[identifier] }) { cleanUpIfDone(copy) }
        }
    }

    /// After a complete walk of the pins: kept copies of files no pin covers any more
    /// (deleted on the server, moved out of a pinned folder) go, and their records.
    func releaseKeptCopies(except pinned: Set<ItemIdentifier>) {
        for identifier in sync.pins.kept.keys where !pinned.contains(identifier) {
            try? sync.changePins(.forgetKept(identifier))
            if let copy = copies.withLock({ $0[identifier] }) { cleanUpIfDone(copy, ignoringPins: true) }
        }
    }

    /// Every pinned file, found by listing the pinned folders (from the cache while it is
    /// fresh), with `extra` added: what pinning it would take. Bounded like a listing.
    func pinnedSet(adding extra: ItemIdentifier? = nil) throws(Errno) -> PinnedSet {
        var set = PinnedSet()
        var roots = Array(sync.pins.pinned)
        if let extra { roots.append(extra) }
        var seen = Set<ItemIdentifier>()
        var stack = roots
        while let identifier = stack.popLast() {
            guard seen.insert(identifier).inserted else { continue }
            guard seen.count <= ListingBounds.maximumEntries else {
                logger.error("pins: more than \(ListingBounds.maximumEntries) pinned items; the rest are not kept")
                throw .ioError
            }
            let item: ProviderItem
            do {
                item = try currentItem(identifier)
            } catch .noSuchFileOrDirectory {
                if sync.pins.pinned.contains(identifier) {
                    logger.notice("unpinned \(identifier): deleted on the server")
                    try? sync.changePins(.unpin(identifier))
                }
                continue
            }
            if item.kind == .file {
                set.files.append(item)
                set.bytes += max(item.size, 0)
            } else if item.kind.isContainer {
                stack.append(contentsOf: try listing(of: item.identifier).identifiers)
            }
        }
        return set
    }

    /// The files pins cover, and their size.
    struct PinnedSet {
        var files: [ProviderItem] = []
        var bytes: Int64 = 0
    }

    /// Records a clean, unused local copy of a pinned file as holding `version`, after its
    /// bytes reached the disk; true when it did (a copy in use or changed meanwhile is not).
    @discardableResult
    func recordKept(_ copy: LocalCopy, as version: String) -> Bool {
        copy.condition.lock()
        let usable: Bool
        if case .ready = copy.state { usable = !copy.dirty && !copy.saving && copy.writers == 0 && copy.baseVersion == version }
        else { usable = false }
        // A descriptor of its own: the copy may be cleaned up (unpinned) meanwhile.
        let descriptor = usable && copy.descriptor >= 0 ? dup(copy.descriptor) : -1
        let identifier = copy.identifier
        copy.condition.unlock()
        guard descriptor >= 0 else { return false }
        defer { Glibc.close(descriptor) }
        var info = stat()
        guard Glibc.fsync(descriptor) == 0, fstat(descriptor, &info) == 0 else { return false }
        let kept = PinRegistry.Kept(version: version, size: Int64(info.st_size), changedAt: Self.nanoseconds(info.st_mtim))
        guard sync.pins.kept[identifier] != kept else { return true }
        do {
            try sync.changePins(.keep(identifier, kept))
            forgetFailedThumbnails(of: identifier)
            return true
        } catch {
            logger.error("pins: cannot record the local copy of \(identifier): \(error)")
            return false
        }
    }

    /// At mount, before any open: the pinned copies an earlier run left, each trusted only if
    /// its file is still exactly what was recorded (else it goes, and is downloaded again).
    func restorePinnedCopies() -> Set<String> {
        var restored = Set<String>()
        for (identifier, kept) in sync.pins.kept {
            let path = content.copyPath(for: identifier)
            let descriptor = Glibc.open(path, O_RDWR | O_CLOEXEC)
            var info = stat()
            guard descriptor >= 0, fstat(descriptor, &info) == 0, Int64(info.st_size) == kept.size,
                  Self.nanoseconds(info.st_mtim) == kept.changedAt else {
                if descriptor >= 0 { Glibc.close(descriptor) }
                logger.notice("pins: the local copy of \(identifier) is not what was recorded; it will be downloaded again")
                try? sync.changePins(.forgetKept(identifier))
                continue
            }
            let copy = LocalCopy(identifier: identifier, path: path)
            copy.descriptor = descriptor
            copy.baseVersion = kept.version
            copy.state = .ready
            copies.withLock { $0[identifier] = copy }
            restored.insert(path)
        }
        return restored
    }

    /// "Site/Folder/file" as the mount shows it, from what the mount knows.
    func displayPath(of identifier: ItemIdentifier) -> String {
        var names: [String] = []
        var current: ItemIdentifier? = identifier
        for _ in 0..<Self.maximumPinDepth {
            guard let here = current, let item = knownItem(here) else { break }
            names.append(item.name)
            current = item.parent
        }
        return names.isEmpty ? identifier.description : names.reversed().joined(separator: "/")
    }

    /// Where `folder` stands on the mount (see `FolderChain`): its site and every folder down
    /// to it, as the cache and the engine's folders made here know them; nil when a link is
    /// unknown, or the chain does not reach a site within `FolderChain.maximumDepth`.
    func folderChain(of folder: ItemIdentifier) -> FolderChain? {
        var links: [FolderChain.Link] = []
        var current = folder
        while links.count < FolderChain.maximumDepth {
            if current.isSite {
                links.append(FolderChain.Link(identifier: current, name: cache.item(current)?.name ?? current.site))
                return FolderChain(links.reversed())
            }
            guard let item = knownItem(current), item.kind.isContainer, let parent = item.parent else {
                return nil
            }
            links.append(FolderChain.Link(identifier: current, name: item.name))
            current = parent
        }
        return nil
    }

    static func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
}

/// A pin or unpin refused: the errno for `setfattr`, the sentence for `sitefs pin`.
struct PinRefusal: Error {
    var errno: Errno
    var message: String

    init(_ errno: Errno, _ message: String) {
        self.errno = errno
        self.message = message
    }
}

/// What `sitefs pin` and `sitefs unpin` hear back (JSON, from the control attributes).
public struct PinAnswer: Codable, Sendable {
    /// The item as the mount shows it.
    public var path: String
    /// Whether it is pinned now (after an unpin: still covered by a pinned folder above).
    public var pinned: Bool
    /// Why it was refused, when it was.
    public var error: String?

    public init(path: String, pinned: Bool, error: String? = nil) {
        self.path = path
        self.pinned = pinned
        self.error = error
    }
}

/// Sizes for people in messages: 512 B, 3.4 KiB, 12.0 MiB.
public enum ByteSize {
    public static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes), unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}
