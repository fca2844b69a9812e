import Dispatch
import SitefsAPI
import SitefsProvider
import SitefsStore
import SystemPackage

/// A file's earlier versions from the mount: listed (`sitefs versions`, the versions
/// folder `MOUNT/.versions/PATH/`), read by range like any file, and restored
/// (`sitefs restore`), which makes an old version's content the newest: nothing is ever
/// destroyed, the content it replaces stays a version.
extension SitefsFilesystem {
    /// Versions listed at most (the newest): what fits in an attribute's answer.
    static let maximumVersionsListed = 300

    /// A file's versions, newest (current) first: from the last few seconds, or asked now.
    func versionListing(of file: ItemIdentifier, fresh: Bool) throws(Errno) -> VirtualFolders.VersionListing {
        if !fresh, let known = virtual.versions(of: file, freshAt: configuration.clock.now) { return known }
        let item = try currentItem(file)
        guard item.kind == .file else { throw .isDirectory }
        guard !file.isLocal else {
            // Made here and not on the server yet: its only version is what the mount has.
            throw .noData
        }
        let versions: [ItemVersion]
        do throws(ProviderError) {
            versions = Array(try backend.versions(of: file).prefix(Self.maximumVersionsListed))
        } catch {
            throw versionError(error, "versions of \(item.name)")
        }
        let listing = VirtualFolders.VersionListing(versions: versions, names: VersionNames.names(of: versions, fileName: item.name),
                                                    madeAt: configuration.clock.now)
        virtual.remember(listing, of: file)
        return listing
    }

    /// A backend's refusal of versions as an errno: a server that keeps none is ENOTSUP
    /// (said once in the log at info, as it is no failure), a version that is not there
    /// ENOENT (without dropping the file itself from the cache).
    func versionError(_ error: ProviderError, _ operation: String) -> Errno {
        switch error {
        case .refused(501, _, let message):
            logger.info("\(operation): \(message)")
            return .notSupported
        case .refused(404, _, _), .notFound:
            logger.info("\(operation): \(error)")
            return .noSuchFileOrDirectory
        default:
            return handle(error, operation)
        }
    }

    /// `user.sitefs.control.versions` on a file: its versions as JSON (`sitefs versions`).
    func versionsAnswer(_ inode: InodeNumber) throws(Errno) -> [UInt8] {
        let file = try identifier(of: inode)
        do {
            let listing = try versionListing(of: file, fresh: true)
            return Self.json(VersionsAnswer(versions: listing.versions.enumerated().map { index, version in
                VersionsAnswer.Version(id: version.identifier, modifiedAt: version.modified.rfc3339, modifiedBy: version.modifiedBy,
                                       size: version.size, current: index == 0)
            }, error: nil))
        } catch .notSupported {
            return Self.json(VersionsAnswer(versions: [], error: "this server keeps no versions"))
        } catch .noData {
            return Self.json(VersionsAnswer(versions: [], error: "this file is not on the server yet: it has no earlier versions"))
        } catch .isDirectory {
            return Self.json(VersionsAnswer(versions: [], error: "only files have versions"))
        }
    }

    /// `user.sitefs.version_count`: how many versions the server keeps of a file.
    func versionCount(_ inode: InodeNumber) throws(Errno) -> [UInt8] {
        do {
            return Array(String(try versionListing(of: try identifier(of: inode), fresh: false).versions.count).utf8)
        } catch .notSupported {
            throw .noData
        } catch .isDirectory {
            throw .noData
        }
    }

    /// Makes version `version` of the file at `inode` its newest version. Refused with EBUSY
    /// while this mount has a save of it on the way (the restore would race it) or someone
    /// else holds its lock; ENOENT for a version the server does not have.
    func restore(_ inode: InodeNumber, version: String) throws(Errno) {
        let file = try identifier(of: inode)
        guard !file.isLocal else { throw .noSuchFileOrDirectory }
        let item = try currentItem(file)
        guard item.kind == .file else { throw .isDirectory }
        guard item.capabilities.contains(.write), !configuration.readOnly else { throw .readOnlyFileSystem }
        if sync.state(of: file, reading: .shown).shownSave?.isPending == true { throw .resourceBusy }
        if let copy = copies.withLock({ $0[file] }) {
            copy.condition.lock()
            let busy = copy.dirty || copy.writers > 0
            copy.condition.unlock()
            if busy { throw .resourceBusy }
        }
        let restored: ProviderItem
        do throws(ProviderError) {
            restored = try backend.restore(file, version: version, baseVersion: item.version)
        } catch .versionMismatch(let current) {
            // Saved elsewhere a moment ago: the person asked for that old content whatever the
            // newest is, and the newest stays a version; once more, on the current version.
            do throws(ProviderError) {
                restored = try backend.restore(file, version: version, baseVersion: current?.version)
            } catch {
                throw versionError(error, "restore \(item.name) to \(version)")
            }
        } catch {
            throw versionError(error, "restore \(item.name) to \(version)")
        }
        logger.notice("restored \(displayPath(of: file)) to version \(version): now version \(restored.version)")
        virtual.forgetVersions(of: file)
        let shown = sync.view(restored)
        cache.upsert(shown)
        // The kernel's pages and attributes are of the replaced content. Dropped from another
        // thread: this request holds the inode's lock in the kernel.
        if let invalidator = invalidator.withLock({ $0 }) {
            DispatchQueue.global().async { invalidator.invalidateInode(inode, offset: 0, length: 0) }
        }
    }
}

/// What `user.sitefs.control.versions` answers (`sitefs versions`).
struct VersionsAnswer: Encodable {
    struct Version: Encodable {
        var id: String
        var modifiedAt: String
        var modifiedBy: String?
        var size: Int64
        var current: Bool

        enum CodingKeys: String, CodingKey {
            case id, size, current
            case modifiedAt = "modified_at"
            case modifiedBy = "modified_by"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(modifiedAt, forKey: .modifiedAt)
            try c.encode(modifiedBy, forKey: .modifiedBy)
            try c.encode(size, forKey: .size)
            try c.encode(current, forKey: .current)
        }
    }

    var versions: [Version]
    var error: String?

    enum CodingKeys: String, CodingKey { case versions, error }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(versions, forKey: .versions)
        try c.encode(error, forKey: .error)
    }
}
