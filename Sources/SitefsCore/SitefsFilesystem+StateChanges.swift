import SitefsProvider

/// One item's state as the file manager shows it (`user.sitefs.state`), told when it
/// changes: `path` is mount-relative; `state` nil means "look again" (the item the path
/// stood for is gone or became another: a new file the server now has under its own id).
public struct StateChange: Sendable, Equatable, Codable {
    public var path: String
    public var state: String?
    public init(path: String, state: String?) {
        self.path = path
        self.state = state
    }
}

/// What a listener was last told, per item. Items back to "online-only" (the state of
/// everything never touched) are told once and forgotten.
public struct ToldStates: Sendable {
    var told: [ItemIdentifier: (path: String, state: String)] = [:]
    public init() {}
    public var count: Int { told.count }
}

extension SitefsFilesystem {
    /// The state everything has until this mount does something with it.
    static let defaultState = "online-only"

    /// The changes since `told`, which is brought up to date. Only items that can differ
    /// from online-only are looked at: saves and renames the engine holds, local copies,
    /// conflict copies made here, pins and pinned files, and whatever was told last time (so
    /// an upload that finished is told as well). Cheap enough to ask a few times a second;
    /// no lock is held across it.
    public func stateChanges(since told: inout ToldStates) -> [StateChange] {
        var candidates = sync.status.busyItems
        candidates.formUnion(copies.withLock { $0.keys })
        candidates.formUnion(conflictCopies.withLock { $0 })
        candidates.formUnion(sync.pins.pinned)
        candidates.formUnion(sync.pins.kept.keys)
        candidates.formUnion(told.told.keys)
        var changes: [StateChange] = []
        for identifier in candidates {
            guard let item = knownItem(identifier) else {
                if let last = told.told.removeValue(forKey: identifier) { changes.append(StateChange(path: last.path, state: nil)) }
                continue
            }
            let state = syncState(of: item)
            let path = displayPath(of: identifier)
            let last = told.told[identifier]
            if let last, last.path != path { changes.append(StateChange(path: last.path, state: nil)) }  // renamed
            if last?.state != state || last?.path != path {
                if last != nil || state != Self.defaultState { changes.append(StateChange(path: path, state: state)) }
            }
            if state == Self.defaultState {
                told.told[identifier] = nil
            } else {
                told.told[identifier] = (path, state)
            }
        }
        return changes
    }
}
