import SitefsProvider
import SitefsStore
import Synchronization

/// An open directory: a snapshot of the folder's entries, filled page by page as the
/// kernel reads on, so the first page of a huge folder shows before the last is fetched.
/// Offsets are stable for the life of the handle: entry i has offset i + 3 (1 and 2 are
/// `.` and `..`).
final class DirectoryHandle: Sendable {
    struct Snapshot {
        var names: [String] = []
        var identifiers: [ItemIdentifier] = []
        var next: PageToken?
        var complete = false
        /// What the server may still send this listing (used while it is fetched page by page;
        /// mutated in place: a copy would copy its tables at every page).
        var bounds = ListingBounds(pageSize: 1)
    }

    /// nil for the mount root.
    let folder: ItemIdentifier?
    let snapshot: Mutex<Snapshot>
    /// Where the pages not in the snapshot yet come from.
    let pages: ListingPages
    /// For a folder enumerated from the server: its pages become the cached listing once
    /// complete, with the folder's changes meanwhile applied (ServerRead).
    let fetch: ServerRead?

    init(folder: ItemIdentifier?, snapshot: Snapshot, pages: ListingPages, fetch: ServerRead?) {
        self.folder = folder
        self.snapshot = Mutex(snapshot)
        self.pages = pages
        self.fetch = fetch
    }
}

/// An open file: served remotely (read-only, no local copy) or from the local copy. (Not
/// `FileHandle`, which is Foundation's.)
enum OpenFile: Sendable {
    case remote(RemoteReader)
    case local(LocalCopy, writable: Bool)

    var identifier: ItemIdentifier {
        switch self {
        case .remote(let reader): return reader.identifier
        case .local(let copy, _):
            copy.condition.lock()
            defer { copy.condition.unlock() }
            return copy.identifier
        }
    }
}

/// Handle ids -> open directories and files.
final class HandleTable: Sendable {
    private struct State {
        var next: HandleID = 1
        var directories: [HandleID: DirectoryHandle] = [:]
        var files: [HandleID: OpenFile] = [:]
    }

    private let state = Mutex(State())

    func add(_ directory: DirectoryHandle) -> HandleID {
        state.withLock { state in
            defer { state.next += 1 }
            state.directories[state.next] = directory
            return state.next
        }
    }

    func add(_ file: OpenFile) -> HandleID {
        state.withLock { state in
            defer { state.next += 1 }
            state.files[state.next] = file
            return state.next
        }
    }

    func directory(_ id: HandleID) -> DirectoryHandle? { state.withLock { $0.directories[id] } }
    func file(_ id: HandleID) -> OpenFile? { state.withLock { $0.files[id] } }
    func removeDirectory(_ id: HandleID) -> DirectoryHandle? { state.withLock { $0.directories.removeValue(forKey: id) } }
    func removeFile(_ id: HandleID) -> OpenFile? { state.withLock { $0.files.removeValue(forKey: id) } }
    /// The items behind open file handles (one entry per handle).
    var openFiles: [OpenFile] { state.withLock { Array($0.files.values) } }
}
