import SitefsAPI
import SitefsProvider

/// What the sync engine holds, as `sitefs status` and `sitefs sync` show it: the daemon
/// writes it as JSON on its control file and the CLI reads it back with this same type.
public struct SyncStatus: Sendable, Codable {
    public var pending: Int
    public var uploading: [String]
    /// Per upload in flight: bytes sent of the total.
    public var progress: [Progress]
    public var failed: [Failure]
    public var conflicts: [Conflict]
    /// Uploads wait because the server wants a new sign-in (`sitefs login`).
    public var signInRequired: Bool
    /// Deletes and folder removals made offline that the server did not take (someone
    /// changed or filled the item meanwhile, or it refused), with why: what the user wanted
    /// gone is still there.
    public var notApplied: [Failure] = []
    /// Folders made again on the server because something was saved into them here after
    /// they were deleted there.
    public var remade: [Remade] = []
    /// Saves the server refused for good, kept under another name where it took them.
    public var rescued: [Rescue] = []
    /// Why the upload journal cannot be written (disk full, I/O error, read-only), with what
    /// waits to be recorded; nil when every change is recorded.
    public var journalProblem: String?
    /// Items with a save, rename or folder operation queued, in flight or failed: those
    /// whose state is not simply "on the server". Only within the daemon (not encoded).
    public var busyItems: Set<ItemIdentifier> = []
    /// Callers blocked in `SyncEngine.settle` now: a test waits for one to get there instead
    /// of sleeping. Only within the daemon (not encoded).
    public var settling = 0

    public struct Progress: Sendable, Codable {
        public var name: String
        public var sent: Int64
        public var total: Int64
    }

    public struct Failure: Sendable, Codable {
        public var name: String
        public var reason: String
    }

    public struct Remade: Sendable, Codable {
        /// "Site/Folder", as the mount shows it now.
        public var path: String
        public var reason: String
    }

    public struct Rescue: Sendable, Codable {
        public var name: String
        /// "Site/Folder/NAME (rescued ...).EXT".
        public var savedAs: String
        public var reason: String

        enum CodingKeys: String, CodingKey {
            case name, reason
            case savedAs = "saved_as"
        }
    }

    public struct Conflict: Sendable, Codable {
        public var name: String
        public var savedAs: String
        /// The server's version the edit lost to (`sitefs versions` lists it); absent from a
        /// daemon older than the client, or when the server's item could not be read.
        public var conflictsWith: ConflictingVersion?

        public init(name: String, savedAs: String, conflictsWith: ConflictingVersion? = nil) {
            self.name = name
            self.savedAs = savedAs
            self.conflictsWith = conflictsWith
        }

        enum CodingKeys: String, CodingKey {
            case name
            case savedAs
            case conflictsWith = "conflicts_with"
        }
    }

    /// A version a conflict copy's edit did not replace: who stored it and when.
    public struct ConflictingVersion: Sendable, Codable, Equatable {
        public var version: String
        public var modifiedBy: String
        public var modifiedAt: Timestamp

        public init(_ item: ProviderItem) {
            version = item.version
            modifiedBy = item.modifiedBy
            modifiedAt = item.modified
        }

        enum CodingKeys: String, CodingKey {
            case version
            case modifiedBy = "modified_by"
            case modifiedAt = "modified_at"
        }

        /// For a person: "version 3f2a… of 2026-11-27T14:03:12Z by ben".
        public var description: String { "version \(version.prefix(12)) of \(modifiedAt.rfc3339) by \(modifiedBy)" }
    }

    enum CodingKeys: String, CodingKey {
        case pending, uploading, progress, failed, conflicts
        case signInRequired = "sign_in_required"
        case notApplied = "not_applied"
        case remade, rescued
        case journalProblem = "journal_problem"
    }

    public init(pending: Int, uploading: [String], progress: [Progress], failed: [Failure], conflicts: [Conflict],
                signInRequired: Bool) {
        self.pending = pending
        self.uploading = uploading
        self.progress = progress
        self.failed = failed
        self.conflicts = conflicts
        self.signInRequired = signInRequired
    }

    /// Read by `sitefs status` from the daemon; a daemon older than the client sends no
    /// `progress` (then only the names in `uploading` are known).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pending = try c.decode(Int.self, forKey: .pending)
        uploading = try c.decode([String].self, forKey: .uploading)
        progress = try c.decodeIfPresent([Progress].self, forKey: .progress) ?? []
        failed = try c.decode([Failure].self, forKey: .failed)
        conflicts = try c.decode([Conflict].self, forKey: .conflicts)
        signInRequired = try c.decode(Bool.self, forKey: .signInRequired)
        notApplied = try c.decodeIfPresent([Failure].self, forKey: .notApplied) ?? []
        remade = try c.decodeIfPresent([Remade].self, forKey: .remade) ?? []
        rescued = try c.decodeIfPresent([Rescue].self, forKey: .rescued) ?? []
        journalProblem = try c.decodeIfPresent(String.self, forKey: .journalProblem)
    }
}
