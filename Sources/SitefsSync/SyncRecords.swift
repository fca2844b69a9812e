/// What the uploader keeps for `sitefs status` beyond its queues: conflicts, operations the
/// server did not take, folders made again, rescued saves, whether a sign-in is needed and
/// whether the journal can be written. A value guarded by the uploader's `condition`.
///
/// What holds: the lists that grow with the mount's life (`remadeFolders`, `rescues`,
/// `conflicts`, `notApplied`) keep only the newest `shownInStatus` entries, so a mount that
/// runs for months does not keep every one.
struct SyncRecords {
    private(set) var conflicts: [SyncStatus.Conflict] = []
    /// Operations the server did not take, on purpose or not.
    private(set) var notApplied: [SyncStatus.Failure] = []
    /// Folders made again because something was saved into them after they were deleted on
    /// the server.
    private(set) var remadeFolders: [SyncStatus.Remade] = []
    /// Saves the server refused, created under another name.
    private(set) var rescues: [SyncStatus.Rescue] = []
    /// Failed saves copied into the rescue folder, by snapshot: where the copy is.
    var keptOnThisComputer: [String: String] = [:]
    var signInRequired = false

    static let shownInStatus = 100

    mutating func add(_ conflict: SyncStatus.Conflict) { Self.append(conflict, to: &conflicts) }
    mutating func add(notApplied failure: SyncStatus.Failure) { Self.append(failure, to: &notApplied) }
    mutating func add(_ remade: SyncStatus.Remade) { Self.append(remade, to: &remadeFolders) }
    mutating func add(_ rescue: SyncStatus.Rescue) { Self.append(rescue, to: &rescues) }

    private static func append<Entry>(_ entry: Entry, to list: inout [Entry]) {
        list.append(entry)
        if list.count > shownInStatus { list.removeFirst(list.count - shownInStatus) }
    }
}
