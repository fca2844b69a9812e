import Foundation
import SitefsAPI
import SitefsProvider

/// A change of the folder tree the server does not have yet: a delete (every one), or a
/// mkdir, link or chmod made while the server could not be reached (or inside a folder made
/// so). Journaled like a save, shown at once as the user left it, and sent in the order
/// made, after the renames made before it (see `Uploader.attemptOperation` for what each
/// meets on the server and what then happens).
public struct NamespaceOperation: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A folder made here: `identifier` is its local identifier, `parent` where (perhaps
        /// another folder made here), `name` its name.
        case makeFolder = "mkdir"
        /// A server file deleted here: on the server only if it is still the version the user
        /// saw (`baseVersion`); someone's newer edit is kept.
        case deleteFile = "delete"
        /// A server folder removed here (empty, as rmdir needs): on the server only if it is
        /// empty there too; what someone added meanwhile is kept.
        case removeFolder = "rmdir"
        /// A symbolic link made here: `identifier` its local identifier, `parent` and `name`
        /// where, `target` what it points at. Made like a folder (a name taken by a link of
        /// the same target joins it; by anything else, it is made under a conflict name).
        case makeSymlink = "symlink"
        /// A chmod: `mode` on the item (a server item, or something made here whose make
        /// comes first in the order); an item gone on the server meanwhile needs none.
        case setMode = "chmod"

        /// Whether it makes the item `identifier` stands for (which is local until then).
        var makesItem: Bool { self == .makeFolder || self == .makeSymlink }

        /// A delete or rmdir: what POSIX makes durable only once its folder is fsynced
        /// (`unlink(2)`, `rmdir(2)`), so its journal commits need not wait for the disk
        /// (see `UploadJournal.record(_:)`).
        var removes: Bool { self == .deleteFile || self == .removeFolder }
    }

    public var kind: Kind
    public var identifier: ItemIdentifier
    /// The folder's name (mkdir), or the item's name where it was, for status and logs.
    public var name: String
    /// mkdir: where to make it; delete and rmdir: the folder it was in (shown again there if
    /// the server keeps it).
    public var parent: ItemIdentifier?
    /// delete: the version the user saw.
    public var baseVersion: String?
    /// mkdir: where `parent` stood on the mount, made again if it is gone on the server when
    /// the mkdir goes.
    public var folders: FolderChain?
    /// chmod: the permission bits.
    public var mode: UInt16?
    /// symlink: the target.
    public var target: [UInt8]?
    /// Its place in the order of operations (the journal's), 0 until recorded.
    var sequence: Int64 = 0
    /// Not tried again before this: put back while the mount was offline (not persisted; a
    /// mount starts by trying).
    var notBefore: ContinuousClock.Instant = .now
    /// Times it was put back in a row, for the wait before the next try.
    var postponements = 0
    /// rmdir: the deletes of files in the folder that were still queued when it was removed
    /// (`rm -r`), in the order made. They go with it, as one delete of the folder where the
    /// server holds nothing else there (see `Uploader.removeFolder`). Not persisted: each
    /// has its own row in the journal, and a restart sends them one by one.
    var absorbed: [NamespaceOperation] = []

    public init(kind: Kind, identifier: ItemIdentifier, name: String, parent: ItemIdentifier?, baseVersion: String? = nil,
                folders: FolderChain? = nil, mode: UInt16? = nil, target: [UInt8]? = nil) {
        self.kind = kind
        self.identifier = identifier
        self.name = name
        self.parent = parent
        self.baseVersion = baseVersion
        self.folders = folders
        self.mode = mode
        self.target = target
    }
}

extension Uploader {
    /// How a namespace operation ended.
    public enum OperationOutcome: Sendable {
        /// The folder made here is `folder` on the server (made now, or one of the same name
        /// someone made meanwhile, which it joins).
        case madeFolder(NamespaceOperation, ProviderItem)
        /// The link made here is `link` on the server.
        case madeLink(NamespaceOperation, ProviderItem)
        /// The mode is set on the server (`item` as it has it now; nil when the item was gone).
        case modeSet(NamespaceOperation, ProviderItem?)
        /// Deleted on the server (or gone already).
        case deleted(NamespaceOperation)
        /// Not applied, on purpose: the server's item changed (or gained content) since the
        /// user saw it, and someone's work is not removed; `reason` says what.
        case kept(NamespaceOperation, reason: String)
        /// A verdict the operation cannot get past (logged); what it would have removed stays.
        case failed(NamespaceOperation, ProviderError)

        public var operation: NamespaceOperation {
            switch self {
            case .madeFolder(let operation, _), .madeLink(let operation, _), .modeSet(let operation, _), .deleted(let operation),
                 .kept(let operation, _), .failed(let operation, _):
                return operation
            }
        }
    }

    /// Where a folder an item is to go into stands: on the server already (its identifier
    /// there), still to be made (its mkdir pending), or never to be (its mkdir failed).
    enum FolderResolution {
        case ready(ItemIdentifier)
        case waiting
        case abandoned
    }
}

extension ProviderItem {
    /// What a folder made on the mount may do before the server has it.
    public static let localFolderCapabilities: Capabilities = [.read, .addChildren, .rename, .delete]
}
