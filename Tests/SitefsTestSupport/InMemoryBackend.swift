import Foundation
import SitefsAPI
import SitefsProvider
import Synchronization
import Testing

/// A DocumentBackend held in memory, with the server's paging, versions, change feed and
/// byte-exact names, request counting and failure injection: the core's tests run against
/// it without a network or a kernel.
public final class InMemoryBackend: DocumentBackend, Sendable {
    public init() {}

    public struct Node {
        public var item: ProviderItem
        public var content: [UInt8] = []
        public var position: Int
        /// The versions before the current one, oldest first (see `versions(of:)`).
        public var history: [StoredVersion] = []

        /// Keeps what the node holds now as an older version, before its content changes.
        mutating func keepVersion() {
            history.append(StoredVersion(version: item.version, content: content, modified: item.modified, by: item.modifiedBy))
        }
    }

    public struct StoredVersion: Sendable {
        public var version: String
        public var content: [UInt8]
        public var modified: Timestamp
        public var by: String
    }

    public struct State {
        public var nodes: [ItemIdentifier: Node] = [:]
        /// The server's pictures of files, by item (see `setThumbnail`).
        public var thumbnails: [ItemIdentifier: [UInt8]] = [:]
        public var nextID = 100
        public var feed: [ChangeBatch.Change] = []
        public var calls: [String: Int] = [:]
        public var bytesFetched = 0
        public var failure: ProviderError?
        public var locksUnsupported = false
        /// Calls of these names (`createFile`, `modifyContent`, ...) fail with this until cleared.
        public var failuresByCall: [String: ProviderError] = [:]
        /// What each `makeDurable` was asked about, in order.
        public var madeDurable: [[ItemIdentifier]] = []
        public var fetchDelay: Double = 0
        /// Ranged fetches deliver their first half, then wait until this is cleared.
        public var holdFetchesHalfway = false
        public var fetchesHeld = 0
        /// Whole-file fetches (an open for writing) wait, before any byte, until this is
        /// cleared or their caller gives up (`Cancellation`).
        public var holdWholeFetches = false
        public var wholeFetchesHeld = 0
        /// Every ranged fetch, in order.
        public var fetchedRanges: [ClosedRange<Int64>] = []
        /// Uploads stop halfway (progress reported) until this is cleared.
        public var holdUploadsHalfway = false
        /// How long a held call waits for its release (see `InMemoryBackend.holdLimit`).
        public var holdLimit = InMemoryBackend.holdLimit
        /// Renames wait until this is cleared.
        public var holdRenames = false
        /// This many more uploads are applied and then never answered (until released), as
        /// when the daemon dies between the server's commit and its answer.
        public var answersToLose = 0
        public var lostAnswersReleased = false
        /// The next delete is applied and then never answered (until released).
        public var loseDeleteAnswer = false
        /// Deletes wait, not applied, until this is cleared.
        public var holdDeletes = false
        /// Listing calls after this many fail as unreachable (until cleared).
        public var listingsBeforeFailing: Int?
        /// Listing calls failed because of `failListings`, so far.
        public var listingsRefused = 0
        /// Actions run once, in the next call of that name (`children`, `changes`, `item`,
        /// `modifyContent`), after its answer is decided and before it is given: what happens
        /// here and on the server while that answer is on its way.
        public var meanwhile: [String: @Sendable () -> Void] = [:]
        /// The same, run before the answer is decided: what happens between the request's
        /// start and the server's handling of it.
        public var beforeAnswer: [String: @Sendable () -> Void] = [:]
        /// A hostile server: while set, `children` answers with this instead of the folder.
        public var craftedChildren: (@Sendable (PageToken?) -> Page)?
        /// The same for `changes`.
        public var craftedChanges: (@Sendable (PageToken?) -> ChangeBatch)?
        /// Whether `search` answers (a server that searches) or is refused (WebDAV's).
        public var searches = false
    }

    /// The backend's state under one lock, whose condition every held call waits on.
    public final class Guarded: @unchecked Sendable {  // `value` is only touched under `condition`
        private let condition = NSCondition()
        private var value = State()

        /// Runs `body` on the state under the lock, then wakes every held call to look again.
        public func withLock<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
            condition.lock()
            defer {
                condition.broadcast()
                condition.unlock()
            }
            return try body(&value)
        }

        /// Waits while `held` is true of the state, woken by every change (`withLock`), and
        /// at least every `recheck` when given, to ask `stop` (a `Cancellation`, which cannot
        /// wake it; asked outside the lock). Returns false when `deadline` came first.
        fileprivate func wait(while held: (State) -> Bool, until deadline: Date, recheck: TimeInterval? = nil,
                              stop: () -> Bool = { false }) -> Bool {
            while true {
                if stop() { return true }
                condition.lock()
                guard held(value) else {
                    condition.unlock()
                    return true
                }
                _ = condition.wait(until: recheck.map { min(deadline, Date().addingTimeInterval($0)) } ?? deadline)
                let stillHeld = held(value)
                condition.unlock()
                if !stillHeld { return true }
                if Date() >= deadline { return false }
            }
        }
    }

    public let state = Guarded()

    /// How long a call waits for a test to release a hold (`holdUploadsHalfway`, ...) before
    /// it fails with an issue saying so: a test that forgot to release one fails instead of
    /// hanging the run. `limitHolds(to:)` changes it for one backend.
    public static let holdLimit: TimeInterval = 30

    /// Makes held calls of this backend give up after `seconds` instead of `holdLimit`.
    public func limitHolds(to seconds: TimeInterval) { state.withLock { $0.holdLimit = seconds } }

    /// Waits, without polling, while `held` is true of the state; past `holdLimit` records an
    /// issue and throws. With `cancellation`, also ends (throwing `.cancelled`) when the
    /// caller gives up, asked every 5 ms since nothing signals it.
    private func waitWhile(_ what: String, cancellation: Cancellation? = nil,
                           _ held: (State) -> Bool) throws(ProviderError) {
        let limit = state.withLock { $0.holdLimit }
        let deadline = Date().addingTimeInterval(limit)
        var cancelled = false
        let released = state.wait(while: held, until: deadline, recheck: cancellation == nil ? nil : 0.005) {
            cancelled = cancellation?.isCancelled ?? false
            return cancelled
        }
        if cancelled { throw .cancelled }
        guard released else {
            Issue.record("InMemoryBackend: \(what) was held for \(limit) s and never released")
            throw .unreachable("test: \(what) was never released")
        }
    }

    /// Every call fails with this until cleared.
    public func fail(with error: ProviderError?) { state.withLock { $0.failure = error } }

    /// Every call named `call` fails with `error` until cleared with nil (a server that
    /// refuses one kind of request: a read-only folder, a name it will not take).
    public func fail(_ call: String, with error: ProviderError?) { state.withLock { $0.failuresByCall[call] = error } }
    /// Lets `count` more listing calls (`children`) through, then fails them until cleared (nil).
    public func failListings(after count: Int?) { state.withLock { $0.listingsBeforeFailing = count } }
    /// How many listing calls `failListings` has failed: a test knows a failure was decided.
    public var listingsRefused: Int { state.withLock { $0.listingsRefused } }
    /// Runs `action` in the next listing call, after its page is taken, before it is answered.
    public func duringNextListing(_ action: @escaping @Sendable () -> Void) { duringNext("children", action) }
    /// Runs `action` once in the next call named `call`, after its answer is decided and
    /// before it is given.
    public func duringNext(_ call: String, _ action: @escaping @Sendable () -> Void) { state.withLock { $0.meanwhile[call] = action } }
    /// Runs `action` once in the next call named `call`, before its answer is decided.
    public func beforeNextAnswer(of call: String, _ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.beforeAnswer[call] = action }
    }
    /// Answers every listing call with `answer` (nil: the folder's real children again).
    public func craftChildren(_ answer: (@Sendable (PageToken?) -> Page)?) { state.withLock { $0.craftedChildren = answer } }
    /// Answers every change-feed call with `answer` (nil: the real feed again).
    public func craftChanges(_ answer: (@Sendable (PageToken?) -> ChangeBatch)?) { state.withLock { $0.craftedChanges = answer } }
    /// Makes the server claim `size` for a file, whatever its content.
    public func claimSize(_ size: Int64, of identifier: ItemIdentifier) { state.withLock { $0.nodes[identifier]?.item.size = size } }

    /// Runs what `duringNext` set for `call`, if anything (taken first: it runs once).
    private func runMeanwhile(_ call: String) { state.withLock { $0.meanwhile.removeValue(forKey: call) }?() }
    /// Makes downloads slow, so concurrent opens overlap.
    public func delayFetches(by seconds: Double) { state.withLock { $0.fetchDelay = seconds } }
    /// Makes ranged fetches stop after their first half, as a slow network would, until released.
    public func holdFetchesHalfway(_ hold: Bool) { state.withLock { $0.holdFetchesHalfway = hold } }
    /// Makes whole-file fetches wait before any byte until released or cancelled.
    public func holdWholeFetches(_ hold: Bool) { state.withLock { $0.holdWholeFetches = hold } }
    /// Whole-file fetches waiting right now.
    public var wholeFetchesHeld: Int { state.withLock { $0.wholeFetchesHeld } }
    /// Ranged fetches waiting halfway right now.
    public var fetchesHeld: Int { state.withLock { $0.fetchesHeld } }
    /// Makes uploads report half their bytes sent and wait there until released.
    public func holdUploadsHalfway(_ hold: Bool) { state.withLock { $0.holdUploadsHalfway = hold } }
    /// Makes renames (updates that change a name) wait until released.
    public func holdRenames(_ hold: Bool) { state.withLock { $0.holdRenames = hold } }
    /// The next `count` uploads of content are applied, then their callers wait until
    /// `releaseLostAnswers()` and get an error: the server has the save, the caller never knew.
    public func loseAnswers(ofNextUploads count: Int) { state.withLock { $0.answersToLose = count } }
    public func releaseLostAnswers() { state.withLock { $0.lostAnswersReleased = true } }
    /// The next delete is applied, then its caller waits until `releaseLostAnswers()` and
    /// gets an error: the server deleted the item, the daemon never learnt it.
    public func loseAnswerOfNextDelete() { state.withLock { $0.loseDeleteAnswer = true } }
    /// Makes deletes wait before they are applied until released.
    public func holdDeletes(_ hold: Bool) { state.withLock { $0.holdDeletes = hold } }
    public func calls(_ name: String) -> Int { state.withLock { $0.calls[name] ?? 0 } }
    public var bytesFetched: Int { state.withLock { $0.bytesFetched } }
    public var fetchedRanges: [ClosedRange<Int64>] { state.withLock { $0.fetchedRanges } }

    @discardableResult
    public func addSite(_ name: String, readOnly: Bool = false) -> ItemIdentifier {
        state.withLock { state in
            let id = String(state.nextID)
            state.nextID += 1
            let identifier = ItemIdentifier.site(id)
            state.nodes[identifier] = Node(item: Self.item(identifier, parent: nil, name: name, kind: .site, readOnly: readOnly),
                                           position: state.nextID)
            return identifier
        }
    }

    @discardableResult
    public func add(_ name: String, in parent: ItemIdentifier, kind: ProviderItem.Kind, content: [UInt8] = [], readOnly: Bool = false) -> ItemIdentifier {
        state.withLock { state in Self.insert(name, in: parent, kind: kind, content: content, readOnly: readOnly, state: &state) }
    }

    public func content(of identifier: ItemIdentifier) -> [UInt8]? { state.withLock { $0.nodes[identifier]?.content } }
    /// Everything in `parent`, by name.
    public func nodes(in parent: ItemIdentifier) -> [ProviderItem] {
        state.withLock { $0.nodes.values.filter { $0.item.parent == parent }.map(\.item).sorted { $0.name < $1.name } }
    }

    public func node(named name: String, in parent: ItemIdentifier) -> ProviderItem? {
        state.withLock { $0.nodes.values.first { $0.item.parent == parent && ItemName.same($0.item.name, name) }?.item }
    }

    private static func insert(_ name: String, in parent: ItemIdentifier, kind: ProviderItem.Kind, content: [UInt8], readOnly: Bool,
                               state: inout State) -> ItemIdentifier {
        let identifier = ItemIdentifier(site: parent.site, id: String(state.nextID))
        state.nextID += 1
        var item = Self.item(identifier, parent: parent, name: name, kind: kind, readOnly: readOnly)
        item.size = Int64(content.count)
        state.nodes[identifier] = Node(item: item, content: content, position: state.nextID)
        state.feed.append(.updated(item))
        return identifier
    }

    public static func item(_ identifier: ItemIdentifier, parent: ItemIdentifier?, name: String, kind: ProviderItem.Kind, readOnly: Bool) -> ProviderItem {
        let capabilities: Capabilities
        switch (kind, readOnly) {
        case (_, true): capabilities = [.read]
        case (.file, false): capabilities = [.read, .write, .rename, .delete]
        case (.symlink, false): capabilities = [.read, .rename, .delete]
        case (.folder, false): capabilities = [.read, .addChildren, .rename, .delete]
        case (.site, false): capabilities = [.read, .addChildren]
        }
        return ProviderItem(identifier: identifier, parent: parent, name: name, kind: kind, size: 0,
                            created: Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000),
                            modified: Timestamp(microsecondsSinceEpoch: 1_700_000_000_000_000),
                            createdBy: "test", modifiedBy: "test", version: UUID().uuidString, capabilities: capabilities)
    }

    func call(_ name: String) throws(ProviderError) {
        let (failure, before) = state.withLock { state in
            state.calls[name, default: 0] += 1
            return (state.failure ?? state.failuresByCall[name], state.beforeAnswer.removeValue(forKey: name))
        }
        before?()
        if let failure { throw failure }
    }

    /// A change someone else makes on the server: new content for a file.
    public func editOnServer(_ identifier: ItemIdentifier, content: [UInt8]) {
        state.withLock { state in
            guard var node = state.nodes[identifier] else { return }
            node.keepVersion()
            node.content = content
            node.item.size = Int64(content.count)
            node.item.version = UUID().uuidString
            state.nodes[identifier] = node
            state.feed.append(.updated(node.item))
        }
    }

    /// A change someone else makes on the server: a new name.
    public func renameOnServer(_ identifier: ItemIdentifier, to name: String) {
        state.withLock { state in
            guard state.nodes[identifier] != nil else { return }
            state.nodes[identifier]!.item.name = name
            state.feed.append(.updated(state.nodes[identifier]!.item))
        }
    }

    private func page(_ items: [Node], after token: PageToken?, limit: Int) -> Page {
        let after = token.flatMap { Int($0.rawValue) } ?? 0
        let sorted = items.filter { $0.position > after }.sorted { $0.position < $1.position }
        let slice = Array(sorted.prefix(limit))
        return Page(items: slice.map(\.item), next: sorted.count > limit ? slice.last.map { PageToken(String($0.position)) } : nil)
    }

    public func sites(after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try call("sites")
        return state.withLock { page($0.nodes.values.filter { $0.item.kind == .site }, after: token, limit: limit) }
    }

    public func children(of folder: ItemIdentifier, after token: PageToken?, limit: Int) throws(ProviderError) -> Page {
        try call("children")
        if let crafted = state.withLock({ $0.craftedChildren }) { return crafted(token) }
        let served = try state.withLock { state throws(ProviderError) -> Page in
            if let allowed = state.listingsBeforeFailing {
                guard allowed > 0 else {
                    state.listingsRefused += 1
                    throw .unreachable("listing failed on purpose")
                }
                state.listingsBeforeFailing = allowed - 1
            }
            guard state.nodes[folder] != nil else { throw .notFound }
            return page(state.nodes.values.filter { $0.item.parent == folder }, after: token, limit: limit)
        }
        runMeanwhile("children")
        return served
    }

    public func item(_ identifier: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try call("item")
        let item = try state.withLock { state throws(ProviderError) in
            guard let node = state.nodes[identifier] else { throw .notFound }
            return node.item
        }
        runMeanwhile("item")
        return item
    }

    /// Gives a file a picture the server makes of it (any version), as sitefs-server's
    /// thumbnails; nil removes it.
    public func setThumbnail(_ png: [UInt8]?, for file: ItemIdentifier) { state.withLock { $0.thumbnails[file] = png } }

    public func thumbnail(of file: ItemIdentifier, version: String, size: Int) throws(ProviderError) -> [UInt8]? {
        try call("thumbnail")
        return try state.withLock { state throws(ProviderError) -> [UInt8]? in
            guard let node = state.nodes[file] else { throw .notFound }
            guard node.item.version == version else { throw .versionMismatch(current: node.item) }
            return state.thumbnails[file]
        }
    }

    public func fetchContent(of file: ItemIdentifier, version: String?, range: ClosedRange<Int64>?, ifNoneMatch: String?,
                      into sink: ContentSink, cancellation: Cancellation) throws(ProviderError) -> FetchOutcome {
        try call("fetch")
        let delay = state.withLock { $0.fetchDelay }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        if range == nil { try waitWhileWholeFetchesAreHeld(cancellation) }
        let (bytes, current) = try state.withLock { state throws(ProviderError) -> ([UInt8], String) in
            guard var node = state.nodes[file] else { throw .notFound }
            if let version, version != node.item.version {
                // An older version, read as it was stored.
                guard let old = node.history.first(where: { $0.version == version }) else { throw .notFound }
                node.content = old.content
                node.item.version = old.version
            }
            // A range past the content (the size claimed was false): what a server sends is short.
            if let range, range.lowerBound >= Int64(node.content.count) { throw .invalidResponse("416: range not satisfiable") }
            let bytes = range.map { Array(node.content[Int($0.lowerBound)...Int(min($0.upperBound, Int64(node.content.count) - 1))]) }
                ?? node.content
            if ifNoneMatch != node.item.version { state.bytesFetched += bytes.count }
            if let range { state.fetchedRanges.append(range) }
            return (bytes, node.item.version)
        }
        if ifNoneMatch == current { return .notModified }
        switch sink {
        case .pieces(let limit, let receive):
            guard bytes.count <= limit else { throw .invalidResponse("content larger than the range asked for") }
            // In two pieces, as a network delivers them, so readers see a partial range too.
            do {
                try bytes.withUnsafeBytes { all in
                    let half = all.count / 2
                    try receive(UnsafeRawBufferPointer(rebasing: all[..<half]))
                    try waitWhileFetchesAreHeld()
                    try receive(UnsafeRawBufferPointer(rebasing: all[half...]))
                }
            } catch {
                throw .localIO("receiving content: \(error)")
            }
        case .file(let descriptor, let offset, _):
            _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(offset)) }
        }
        return .fetched(version: current, totalSize: Int64(bytes.count))
    }

    private func waitWhileWholeFetchesAreHeld(_ cancellation: Cancellation) throws(ProviderError) {
        guard state.withLock({ $0.holdWholeFetches }) else { return }
        state.withLock { $0.wholeFetchesHeld += 1 }
        defer { state.withLock { $0.wholeFetchesHeld -= 1 } }
        try waitWhile("a whole-file fetch", cancellation: cancellation) { $0.holdWholeFetches }
    }

    private func waitWhileFetchesAreHeld() throws(ProviderError) {
        guard state.withLock({ $0.holdFetchesHalfway }) else { return }
        state.withLock { $0.fetchesHeld += 1 }
        defer { state.withLock { $0.fetchesHeld -= 1 } }
        try waitWhile("a ranged fetch") { $0.holdFetchesHalfway }
    }

    public func createFolder(named name: String, in parent: ItemIdentifier) throws(ProviderError) -> ProviderItem {
        try call("createFolder")
        return try create(name, in: parent, kind: .folder, content: [])
    }

    public func createFile(named name: String, in parent: ItemIdentifier, contentsOf path: String, modified: Timestamp?,
                    progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try call("createFile")
        guard let data = FileManager.default.contents(atPath: path) else { throw .localIO(path) }
        var item = try create(name, in: parent, kind: .file, content: Array(data))
        if let modified {
            item.modified = modified
            state.withLock { $0.nodes[item.identifier]?.item.modified = modified }
        }
        return item
    }

    public func createSymlink(named name: String, in parent: ItemIdentifier, target: [UInt8]) throws(ProviderError) -> ProviderItem {
        try call("createSymlink")
        guard ProviderItem.isValidSymlinkTarget(target) else {
            throw .refused(status: 400, code: "invalid_target", message: "bad symlink target")
        }
        let item = try create(name, in: parent, kind: .symlink, content: target)
        return state.withLock { state in
            state.nodes[item.identifier]?.item.symlinkTarget = target
            return state.nodes[item.identifier]!.item
        }
    }

    private func create(_ name: String, in parent: ItemIdentifier, kind: ProviderItem.Kind, content: [UInt8]) throws(ProviderError) -> ProviderItem {
        try state.withLock { state throws(ProviderError) in
            guard state.nodes[parent] != nil else { throw .notFound }
            if state.nodes.values.contains(where: { $0.item.parent == parent && ItemName.same($0.item.name, name) }) { throw .nameTaken(name) }
            return state.nodes[Self.insert(name, in: parent, kind: kind, content: content, readOnly: false, state: &state)]!.item
        }
    }

    public func modifyContent(of file: ItemIdentifier, baseVersion: String?, contentsOf path: String, modified: Timestamp?,
                       progress: TransferProgress?) throws(ProviderError) -> ProviderItem {
        try call("modifyContent")
        guard let data = FileManager.default.contents(atPath: path) else { throw .localIO(path) }
        progress?.update(sent: Int64(data.count / 2))
        try waitWhile("an upload") { $0.holdUploadsHalfway }
        progress?.update(sent: Int64(data.count))
        let (item, loseAnswer) = try state.withLock { state throws(ProviderError) in
            guard var node = state.nodes[file] else { throw .notFound }
            try Self.refuseIfLockedElsewhere(node)
            if let baseVersion, baseVersion != node.item.version { throw .versionMismatch(current: node.item) }
            node.keepVersion()
            node.content = Array(data)
            node.item.size = Int64(data.count)
            node.item.version = UUID().uuidString
            node.item.modified = modified ?? .now()
            state.nodes[file] = node
            state.feed.append(.updated(node.item))
            let lose = state.answersToLose > 0
            if lose { state.answersToLose -= 1 }
            return (node.item, lose)
        }
        if loseAnswer {
            try waitWhile("an upload's lost answer") { !$0.lostAnswersReleased }
            throw .unreachable("test: the answer was lost")
        }
        runMeanwhile("modifyContent")
        return item
    }

    public func update(_ identifier: ItemIdentifier, _ changes: ItemChanges, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        try call("update")
        if changes.name != nil { try waitWhile("a rename") { $0.holdRenames } }
        return try state.withLock { state throws(ProviderError) in
            guard var node = state.nodes[identifier] else { throw .notFound }
            try Self.refuseIfLockedElsewhere(node)
            let parent = changes.parent ?? node.item.parent
            let name = changes.name ?? node.item.name
            if let occupant = state.nodes.values.first(where: { $0.item.parent == parent && ItemName.same($0.item.name, name) && $0.item.identifier != identifier }) {
                guard changes.replaceExisting else { throw .nameTaken(name) }
                try Self.refuseIfLockedElsewhere(occupant)
                var survivor = occupant
                survivor.content = node.content
                survivor.item.size = node.item.size
                survivor.item.version = node.item.version
                state.nodes[identifier] = nil
                state.nodes[occupant.item.identifier] = survivor
                state.feed.append(.deleted(identifier))
                return survivor.item
            }
            if changes.parent != nil && changes.parent != node.item.parent { node.position = state.nextID; state.nextID += 1 }
            node.item.parent = parent
            node.item.name = name
            if let modified = changes.modified { node.item.modified = modified }
            if let mode = changes.mode { node.item.mode = mode & ProviderItem.permissionBits }
            state.nodes[identifier] = node
            state.feed.append(.updated(node.item))
            return node.item
        }
    }

    public func delete(_ identifier: ItemIdentifier, baseVersion: String?) throws(ProviderError) {
        try call("delete")
        try waitWhile("a delete") { $0.holdDeletes }
        try state.withLock { state throws(ProviderError) in
            guard let node = state.nodes[identifier] else { throw .notFound }
            try Self.refuseIfLockedElsewhere(node)
            // As the real server: conditional on the version the caller saw (If-Match).
            if let baseVersion, node.item.version != baseVersion { throw .versionMismatch(current: node.item) }
            var doomed = [identifier]
            var index = 0
            while index < doomed.count {
                doomed += state.nodes.values.filter { $0.item.parent == doomed[index] }.map(\.item.identifier)
                index += 1
            }
            for victim in doomed {
                state.nodes[victim] = nil
                state.feed.append(.deleted(victim))
            }
        }
        if state.withLock({ state in defer { state.loseDeleteAnswer = false }; return state.loseDeleteAnswer }) {
            try waitWhile("a delete's lost answer") { !$0.lostAnswersReleased }
            throw .unreachable("test: the answer was lost")
        }
    }

    public func changes(since token: PageToken?) throws(ProviderError) -> ChangeBatch {
        try call("changes")
        if let crafted = state.withLock({ $0.craftedChanges }) { return crafted(token) }
        let batch = state.withLock { state in
            let start = token.flatMap { Int($0.rawValue) } ?? state.feed.count
            return ChangeBatch(changes: Array(state.feed[start...]), next: PageToken(String(state.feed.count)), hasMore: false)
        }
        runMeanwhile("changes")
        return batch
    }

    // MARK: Locks for editing

    /// Whether this server locks (a WebDAV server without a lock database does not).
    public func setLocking(_ supported: Bool) { state.withLock { $0.locksUnsupported = !supported } }

    public var lockSupport: LockSupport {
        state.withLock { $0.locksUnsupported ? .unsupported(reason: "the test server does not lock") : .supported }
    }

    /// Someone else locks `file` for editing (as another mount would), reported in the feed.
    public func lockOnServer(_ file: ItemIdentifier, by holder: String, device: String = "site-laptop",
                             since: Timestamp = .now()) {
        state.withLock { state in
            guard state.nodes[file] != nil else { return }
            state.nodes[file]!.item.lock = ProviderLock(holder: holder.lowercased(), holderName: holder, device: device,
                                                        application: "LibreOffice", since: since, expires: nil, heldHere: false)
            state.feed.append(.updated(state.nodes[file]!.item))
        }
    }

    /// Their lock ends (they closed the document), reported in the feed.
    public func unlockOnServer(_ file: ItemIdentifier) {
        state.withLock { state in
            guard state.nodes[file]?.item.lock != nil else { return }
            state.nodes[file]!.item.lock = nil
            state.feed.append(.updated(state.nodes[file]!.item))
        }
    }

    /// The lock on `file`, as the server has it.
    public func lockOf(_ file: ItemIdentifier) -> ProviderLock? { state.withLock { $0.nodes[file]?.item.lock } }

    public func lock(_ file: ItemIdentifier, _ request: LockRequest) throws(ProviderError) -> ProviderLock {
        try call("lock")
        return try state.withLock { state throws(ProviderError) -> ProviderLock in
            if state.locksUnsupported { throw .refused(status: 405, code: "method_not_allowed", message: "the test server does not lock") }
            guard var node = state.nodes[file] else { throw .notFound }
            try Self.refuseIfLockedElsewhere(node)
            let since = node.item.lock?.since ?? .now()
            let lock = ProviderLock(holder: "test", holderName: request.holderName, device: request.device,
                                    application: request.application, since: since,
                                    expires: Timestamp(microsecondsSinceEpoch: Timestamp.now().microseconds
                                                       + request.timeout.components.seconds * 1_000_000),
                                    heldHere: true)
            let taken = node.item.lock == nil
            node.item.lock = lock
            state.nodes[file] = node
            if taken { state.feed.append(.updated(node.item)) }
            return lock
        }
    }

    public func unlock(_ file: ItemIdentifier) throws(ProviderError) {
        try call("unlock")
        state.withLock { state in
            guard state.nodes[file]?.item.lock?.heldHere == true else { return }
            state.nodes[file]!.item.lock = nil
            state.feed.append(.updated(state.nodes[file]!.item))
        }
    }

    /// Records what it was asked about; local work, so it fails only where
    /// `fail("makeDurable", with:)` says (not with the server's `failure`).
    public func makeDurable(_ items: [ItemIdentifier]) throws(ProviderError) {
        let failure = state.withLock { state in
            state.madeDurable.append(items)
            return state.failuresByCall["makeDurable"]
        }
        if let failure { throw failure }
    }

    private static func refuseIfLockedElsewhere(_ node: Node) throws(ProviderError) {
        if let lock = node.item.lock, !lock.heldHere { throw .locked(by: lock) }
    }
}
