import Foundation
import SitefsProvider
import SitefsSync
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// "Free up space" (File Provider's `evictItem`, OneDrive's and Finder's "Remove Download"):
/// `sitefs evict PATH...` drops the local copies of a file, or of everything in a folder,
/// whose content is on the server, so they are online-only again.
///
/// The rule:
/// - Never a copy with something the server does not have: a save not sent or failed, a
///   file only here, a copy being written; nor one a program has open. Those are kept and
///   said why.
/// - A pin on the item, or on anything under a folder, is removed first: asking to free a
///   kept file's space is asking to stop keeping it (OneDrive's "Free up space" on an
///   "Always keep on this device" file does the same). An item kept by a pinned folder
///   *above* it is refused: freeing it would last only until that pin's next pass.
extension SitefsFilesystem {
    /// At most this many kept files are named in an answer (the count covers all).
    static let maximumKeptListed = 100

    func evict(_ inode: InodeNumber) throws(PinRefusal) -> EvictAnswer {
        guard inode != .root else { throw PinRefusal(.invalidArgument, "free up space in a site or anything in one, not the mount root") }
        let item: ProviderItem
        do { item = try currentItem(try identifier(of: inode)) } catch { throw PinRefusal(error, "the item cannot be read") }
        let target = item.identifier
        let path = displayPath(of: target)

        if let parent = item.parent, let above = pinCovering(parent) {
            throw PinRefusal(.permissionDenied, "kept on this device by the pinned folder \(displayPath(of: above)); "
                             + "free up space there, or `sitefs unpin` it")
        }
        // Measured first: unpinning removes the copies nothing else holds at once.
        let candidates = copies.withLock { Array($0.values) }
            .filter { $0.identifier == target || isInside($0.identifier, target) }
            .map { (copy: $0, bytes: Self.diskUsage($0.path)) }

        // Unpinned first: the item's own pin and, for a folder, every pin inside it.
        let pinsInside = sync.pins.pinned.filter { $0 == target || isInside($0, target) }
        for pin in pinsInside {
            do { try sync.changePins(.unpin(pin)) } catch { throw PinRefusal(.ioError, "the pin on \(displayPath(of: pin)) cannot be removed: \(error)") }
        }
        var answer = EvictAnswer(path: path, unpinned: pinsInside.map(displayPath(of:)).sorted())
        if !pinsInside.isEmpty {
            logger.info("evict \(path): unpinned \(answer.unpinned.joined(separator: ", "))")
            releaseUnpinnedCopies()
            keeper.request()
        }

        for (copy, bytes) in candidates {
            if copies.withLock({ $0[copy.identifier] === copy }) {
                if let reason = keepReason(copy) {
                    answer.keep(displayPath(of: copy.identifier), because: reason)
                    continue
                }
                cleanUpIfDone(copy)
                guard copies.withLock({ $0[copy.identifier] !== copy }) else {
                    answer.keep(displayPath(of: copy.identifier), because: "in use")  // taken again meanwhile
                    continue
                }
            }
            answer.freedBytes += bytes
            answer.freedFiles += 1
        }
        logger.info("evict \(path): freed \(answer.freedFiles) files (\(answer.freedBytes) bytes), kept \(answer.keptCount)")
        return answer
    }

    /// Why a copy must stay, or nil when it may go.
    private func keepReason(_ copy: LocalCopy) -> String? {
        if copy.identifier.isLocal { return "only on this device: not on the server yet" }
        let state = sync.state(of: copy.identifier, reading: .queue)
        if state.hasFailed { return "its last save failed to upload (see `sitefs status`)" }
        if !state.isIdle { return "a save is not on the server yet" }
        copy.condition.lock()
        defer { copy.condition.unlock() }
        if copy.dirty || copy.saving { return "a save is not on the server yet" }
        if copy.handles > 0 { return "open in a program" }
        return nil
    }

    /// Whether `identifier` is somewhere under the folder `ancestor` (as the mount knows
    /// its folders; bounded like every walk up).
    func isInside(_ identifier: ItemIdentifier, _ ancestor: ItemIdentifier) -> Bool {
        var current = knownItem(identifier)?.parent
        for _ in 0..<Self.maximumPinDepth {
            guard let here = current else { return false }
            if here == ancestor { return true }
            current = knownItem(here)?.parent
        }
        return false
    }

    /// What a file takes on disk (its allocated blocks), 0 when it cannot be read.
    static func diskUsage(_ path: String) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return Int64(info.st_blocks) * 512
    }
}

/// The daemon's answer to `user.sitefs.control.evict` (`sitefs evict`).
public struct EvictAnswer: Codable, Sendable {
    /// The item as the mount shows it.
    public var path: String
    /// What was freed: local copies removed, and the disk blocks they took.
    public var freedFiles = 0
    public var freedBytes: Int64 = 0
    /// Pins removed first (the item's own, and any inside a folder).
    public var unpinned: [String]
    /// Copies that stay, each with why (the first `maximumKeptListed`), and how many in all.
    public var kept: [KeptCopy] = []
    public var keptCount = 0
    /// Why nothing was done, when refused.
    public var error: String?

    public struct KeptCopy: Codable, Sendable, Equatable {
        public var path: String
        public var reason: String
    }

    public init(path: String, unpinned: [String] = [], error: String? = nil) {
        self.path = path
        self.unpinned = unpinned
        self.error = error
    }

    /// The answer cut to fit an extended attribute's value (64 KiB at most): kept files
    /// beyond that are counted, not named.
    func fitting(within limit: Int) -> EvictAnswer {
        var answer = self
        while answer.kept.count > 0, SitefsFilesystem.json(answer).count > limit { answer.kept.removeLast() }
        return answer
    }

    mutating func keep(_ path: String, because reason: String) {
        keptCount += 1
        if kept.count < SitefsFilesystem.maximumKeptListed { kept.append(KeptCopy(path: path, reason: reason)) }
    }

    enum CodingKeys: String, CodingKey {
        case path, unpinned, kept, error
        case freedFiles = "freed_files"
        case freedBytes = "freed_bytes"
        case keptCount = "kept_count"
    }
}
