import SitefsAPI
import SitefsProvider

extension Uploader {
    /// One saved snapshot of a file waiting to reach the server.
    public struct Job: Sendable {
        public var identifier: ItemIdentifier
        /// For status lines and for re-creating the file if it was deleted on the server.
        public var name: String
        /// The folder it was in when saved (re-creation and conflict copies go there).
        public var parent: ItemIdentifier?
        public var stagedPath: String
        public var size: Int64
        /// The server version the edit started from: the upload is conditional on it.
        public var baseVersion: String?
        /// Applied after the upload (the server sets its own time on upload).
        public var modified: Timestamp?

        public init(identifier: ItemIdentifier, name: String, parent: ItemIdentifier?, stagedPath: String, size: Int64,
                    baseVersion: String?, modified: Timestamp?) {
            self.identifier = identifier
            self.name = name
            self.parent = parent
            self.stagedPath = stagedPath
            self.size = size
            self.baseVersion = baseVersion
            self.modified = modified
        }
    }

    public enum Outcome: Sendable {
        /// A new version of the same item.
        case uploaded(Job, ProviderItem)
        /// The server had moved on (412): its version keeps the name, the edit went to `copy`.
        case conflicted(Job, original: ProviderItem?, copy: ProviderItem)
        /// The item was deleted on the server: the edit was created again as `item`.
        case recreated(Job, ProviderItem)
        /// A verdict the uploader cannot resolve; the snapshot is kept for `sitefs retry`.
        case failed(Job, ProviderError)

        public var job: Job {
            switch self {
            case .uploaded(let job, _), .conflicted(let job, _, _), .recreated(let job, _), .failed(let job, _): return job
            }
        }
    }

    public struct Status: Sendable, Codable {
        public var pending: Int
        public var uploading: [String]
        public var failed: [Failure]
        public var conflicts: [Conflict]
        /// Uploads wait because the server wants a new sign-in (`sitefs login`).
        public var signInRequired: Bool

        public struct Failure: Sendable, Codable {
            public var name: String
            public var reason: String
        }

        public struct Conflict: Sendable, Codable {
            public var name: String
            public var savedAs: String
        }

        enum CodingKeys: String, CodingKey {
            case pending, uploading, failed, conflicts
            case signInRequired = "sign_in_required"
        }
    }
}
