import Foundation
import SystemPackage

extension SitefsFilesystem {
    /// On the mount root: the daemon's state as JSON, for `sitefs status` and `sitefs sync`.
    static let statusAttribute = "user.sitefs.status"

    public func getExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) -> [UInt8] {
        guard inode == .root, name == Self.statusAttribute else { throw .noData }
        return Array(statusJSON().utf8)
    }

    public func listExtendedAttributes(_ inode: InodeNumber, context: RequestContext) throws(Errno) -> [String] {
        inode == .root ? [Self.statusAttribute] : []
    }

    /// Setting it on the mount root re-queues failed uploads (`sitefs retry`).
    static let retryAttribute = "user.sitefs.retry"

    public func setExtendedAttribute(_ inode: InodeNumber, name: String, value: [UInt8], flags: Int32, context: RequestContext) throws(Errno) {
        guard inode == .root, name == Self.retryAttribute else { throw .notSupported }
        uploader.retryFailed()
    }

    public func removeExtendedAttribute(_ inode: InodeNumber, name: String, context: RequestContext) throws(Errno) {
        throw .notSupported
    }

    /// What `sitefs status` shows.
    public struct MountStatus: Codable, Sendable {
        /// Names of the files open now (once each).
        public var openFiles: [String]
        public var localCopies: Int
        public var uploads: SitefsStore.Uploader.Status
        public var knownItems: Int

        enum CodingKeys: String, CodingKey {
            case openFiles = "open_files"
            case localCopies = "local_copies"
            case uploads
            case knownItems = "known_items"
        }
    }

    public var mountStatus: MountStatus {
        let open = Set(handles.openFiles.map(\.identifier)).map { cache.item($0)?.name ?? $0.description }.sorted()
        return MountStatus(openFiles: open, localCopies: copies.withLock { $0.count }, uploads: uploader.status,
                    knownItems: cache.itemCount)
    }

    func statusJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? String(decoding: encoder.encode(mountStatus), as: UTF8.self)) ?? "{}"
    }
}

import SitefsStore
