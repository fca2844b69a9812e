import Foundation
import SitefsProvider
import SitefsStore
import SitefsSync
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
import SitefsConcurrency
#endif

/// Keeps pinned content on this device: one background thread that, after each request
/// (a pin, a change-feed round that changed something, an upload of a pinned file, the
/// server back after being offline) and at least once per cache TTL, lists what the pins
/// cover and downloads each file not local or not current, one at a time, into the same
/// local copies opens use. Within the cache budget: past it, files are left online-only and
/// the status says so. What it knows is published for `sitefs status` (`PinStatus`).
final class PinKeeper: @unchecked Sendable {
    private weak var filesystem: SitefsFilesystem?
    /// Guards `requested`, `stopped` and `running`. Lock order: a leaf; the pass runs with it
    /// released.
    private let condition = NSCondition()
    private var requested = true
    private var stopped = false
    private var running = false
    /// At least this often a pass runs unasked (the cache TTL: listings are refreshed then).
    private let interval: Duration
    private let clock: MountClock
    /// What the last pass found, and the file downloading now. Lock order: a leaf.
    private let published = NSLock()
    private var progress = PinStatus()
    /// How long a pass waits for a save's answer to be applied before moving on.
    static let longestReportWait: Duration = .seconds(10)
    /// Tests only: runs as a pass comes to each pinned file, before it is looked at.
    let visitPause = Mutex<(@Sendable (ItemIdentifier) -> Void)?>(nil)

    init(filesystem: SitefsFilesystem, interval: Duration, clock: MountClock) {
        self.filesystem = filesystem
        self.interval = max(interval, .seconds(1))
        self.clock = clock
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "sitefs-pins"
        thread.start()
    }

    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Asks for a pass soon (coalesced with one already asked for).
    func request() {
        condition.lock()
        requested = true
        condition.broadcast()
        condition.unlock()
    }

    /// What the keeper knows now. `settled` is true when no pass is asked for or running.
    var status: PinStatus {
        condition.lock()
        let busy = requested || running
        condition.unlock()
        published.lock()
        defer { published.unlock() }
        var status = progress
        status.settled = !busy
        return status
    }

    /// Waits until no pass is asked for or running, or `timeout` passed (`sitefs sync
    /// --pinned` waits with it instead of polling).
    func waitUntilSettled(timeout: Duration) {
        let deadline = clock.now + timeout
        condition.lock()
        defer { condition.unlock() }
        while (requested || running) && !stopped && clock.now < deadline { clock.wait(on: condition, until: deadline) }
    }

    private func run() {
        while true {
            condition.lock()
            let deadline = clock.now + interval
            while !requested && !stopped && clock.now < deadline { clock.wait(on: condition, until: deadline) }
            if stopped {
                condition.unlock()
                return
            }
            requested = false
            running = true
            condition.unlock()
            pass()
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }
    }

    private var isStopped: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopped
    }

    /// One pass: what the pins cover, then each file that is not local and current.
    private func pass() {
        guard let filesystem else { return }
        filesystem.releaseUnpinnedCopies()
        guard !filesystem.sync.pins.pinned.isEmpty else {
            publish { $0 = PinStatus() }
            return
        }
        // What is pinned is known here whether or not the server answers.
        let pinned = filesystem.sync.pins.pinned.map(filesystem.displayPath(of:)).sorted()
        publish { $0.pinned = pinned }
        let set: SitefsFilesystem.PinnedSet
        do {
            set = try filesystem.pinnedSet()
        } catch {
            publish { $0.problem = "the pinned folders cannot be listed now (\(error)); retried later" }
            return
        }
        filesystem.releaseKeptCopies(except: Set(set.files.map(\.identifier)))
        let limit = filesystem.configuration.cacheSizeLimit
        var local = (files: 0, bytes: Int64(0))
        var budgetUsed: Int64 = 0
        var overBudget = 0
        publish { status in
            status.files = set.files.count
            status.bytes = set.bytes
            // Counted again below, of this set: the last pass's count may exceed it (pinned
            // files deleted since), and a set now empty is never walked to count it down.
            status.localFiles = 0
            status.localBytes = 0
            status.problem = nil
            status.budget = limit
        }
        for item in set.files {
            if isStopped { return }
            let size = max(item.size, 0)
            if let limit, budgetUsed + size > limit {
                overBudget += 1
                continue
            }
            budgetUsed += size
            switch keep(item, in: filesystem) {
            case .current:
                local.files += 1
                local.bytes += size
            case .failed(let error):
                publish { $0.problem = "\(filesystem.displayPath(of: item.identifier)): \(error)" }
            }
            publish { status in
                status.localFiles = local.files
                status.localBytes = local.bytes
                status.downloading = nil
            }
        }
        if overBudget > 0, let limit {
            filesystem.logger.warning("pins: \(overBudget) pinned files stay online-only: the cache budget of \(limit) bytes is used up")
            publish { $0.problem = "\(overBudget) pinned files do not fit in the cache budget (--cache-size \(ByteSize.format(limit)))" }
        }
    }

    private enum Kept {
        case current
        case failed(Errno)
    }

    /// Makes one pinned file's local copy current: nothing to do when it holds the server's
    /// version already (or a save of it is on its way); else downloaded (or revalidated,
    /// with If-None-Match) through the same path an open takes, then recorded.
    ///
    /// A save that reached the server but whose answer the core has not applied yet is
    /// waited for: the pass its upload asked for can get here first, and passing over it
    /// would leave the new version unrecorded (the file "downloading") until the next timed
    /// pass. Once applied, the copy's base version is the server's, and is recorded.
    private func keep(_ item: ProviderItem, in filesystem: SitefsFilesystem) -> Kept {
        let identifier = item.identifier
        visitPause.withLock { $0 }?(identifier)
        if let save = filesystem.sync.state(of: identifier, reading: .shown).shownSave {
            guard save.isOnServer else { return .current }  // the local edit is the content
            guard filesystem.sync.waitUntilReported(identifier, timeout: Self.longestReportWait) else {
                request()  // still being applied: looked at again in the next pass
                return .current
            }
            // The answer applied: the item as it is now (a new file's moved to the server's
            // identifier, and its copy with it; the event asked for a pass that finds it).
            guard let applied = filesystem.cache.item(identifier),
                  filesystem.sync.state(of: identifier, reading: .shown).shownSave == nil else { return .current }
            return keepUnsaved(applied, in: filesystem)
        }
        return keepUnsaved(item, in: filesystem)
    }

    /// `keep` for a file with no save of it shown.
    private func keepUnsaved(_ item: ProviderItem, in filesystem: SitefsFilesystem) -> Kept {
        let identifier = item.identifier
        if let copy = filesystem.copies.withLock({ $0[identifier] }) {
            copy.condition.lock()
            var ready = false
            if case .ready = copy.state { ready = true }
            let inUse = copy.dirty || copy.saving || copy.writers > 0
            let current = ready && copy.baseVersion == item.version
            copy.condition.unlock()
            if inUse { return .current }  // being edited: its save will be the content
            if current, filesystem.recordKept(copy, as: item.version) { return .current }
        }
        // Offline: counted as not local, without a try (asked again once the server is back).
        if filesystem.isOffline { return .failed(.networkUnreachable) }
        // About to be replaced: the old record goes first, so a crash cannot leave it naming
        // the new bytes.
        try? filesystem.sync.changePins(.forgetKept(identifier))
        publish { $0.downloading = filesystem.displayPath(of: identifier) }
        let copy: LocalCopy
        do {
            copy = try filesystem.materialize(item, truncate: false, writer: false)
        } catch {
            return .failed(error)
        }
        copy.condition.lock()
        copy.handles -= 1
        let version = copy.baseVersion
        copy.condition.unlock()
        defer { filesystem.cleanUpIfDone(copy) }  // unpinned meanwhile: it goes
        guard let version, version == item.version || filesystem.backend.monitor.offlineSince == nil else {
            return .failed(.networkUnreachable)  // offline: the copy is an older version
        }
        if version != item.version {
            // The server moved on while this ran: the next pass (the change feed asks for one)
            // brings the newer version.
            filesystem.logger.debug("pins: \(item.name) is at \(version) here, \(item.version) was listed")
        }
        filesystem.logger.debug("pins: \(item.name) kept at version \(version)")
        return filesystem.recordKept(copy, as: version) ? .current : .failed(.ioError)
    }

    private func publish(_ change: (inout PinStatus) -> Void) {
        published.lock()
        change(&progress)
        published.unlock()
    }
}

/// Pins as `sitefs status` shows them (part of the mount's status JSON).
public struct PinStatus: Codable, Sendable {
    /// The pinned items themselves, as paths in the mount.
    public var pinned: [String] = []
    /// Files the pins cover, and their total size, as of the last pass.
    public var files = 0
    public var bytes: Int64 = 0
    /// Of those, the ones local and current.
    public var localFiles = 0
    public var localBytes: Int64 = 0
    /// The file downloading now.
    public var downloading: String?
    /// What keeps pinned files from being local (offline, over budget, a failure).
    public var problem: String?
    /// No pass is asked for or running: the figures are final for now.
    public var settled = false
    /// The cache budget (`--cache-size`), when set.
    public var budget: Int64?

    public init() {}

    enum CodingKeys: String, CodingKey {
        case pinned, files, bytes, downloading, problem, settled, budget
        case localFiles = "local_files"
        case localBytes = "local_bytes"
    }
}
