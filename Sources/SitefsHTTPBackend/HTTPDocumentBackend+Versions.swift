import SitefsAPI
import SitefsHTTP
import SitefsProvider

/// A file's stored versions on sitefs-server (`GET /v1/items/{id}/versions`) and restoring
/// one (`POST /v1/items/{id}/versions/{etag}/restore`).
extension HTTPDocumentBackend {
    /// Newest first, as the server lists them. Every entry is checked
    /// (`VersionValidation.version`): one the mount could not show or send back fails the
    /// whole list, since a list with a hole would misnumber "N versions back".
    public func versions(of file: ItemIdentifier) throws(ProviderError) -> [ItemVersion] {
        let list = try json(VersionList.self, .get, Self.itemPath(file, "versions"))
        var versions: [ItemVersion] = []
        versions.reserveCapacity(list.versions.count)
        for version in list.versions {
            versions.append(try VersionValidation.version(version, of: file))
        }
        return versions
    }

    /// Sends the restore with `If-Match` on `baseVersion` (when given) and this backend's
    /// lock token for the file (when it holds one), as a save does (`lockedWrite` says what
    /// a 423 then means).
    public func restore(_ file: ItemIdentifier, version: String, baseVersion: String?) throws(ProviderError) -> ProviderItem {
        guard VersionValidation.isUsable(version) else {
            throw .refused(status: 404, code: "no_such_version", message: "no version of this file is named \(version.prefix(80).debugDescription)")
        }
        let preconditions = baseVersion.map { [("If-Match", "\"\($0)\"")] } ?? []
        let path = Self.itemPath(file, "versions/" + PercentEncoding.encodeComponent(version) + "/restore")
        return try lockedWrite(of: file) { (tokens) throws(ProviderError) in
            try checked(try json(Item.self, .post, path, headers: preconditions + tokens), expected: file)
        }
    }
}

/// What a version from the server must be before the mount shows it or sends it back.
enum VersionValidation {
    /// Longest version id accepted, in bytes (the server's are 32 hex digits).
    static let maximumIDBytes = 256
    /// Longest author name kept (longer is no name: left out).
    static let maximumAuthorBytes = 256

    /// An id that can travel back: 1...256 bytes of visible ASCII without `"` or `\` (it
    /// goes into a URL path, percent-encoded, and into `If-Match`, quoted).
    static func isUsable(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumIDBytes
            && id.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    static func version(_ version: Version, of file: ItemIdentifier) throws(ProviderError) -> ItemVersion {
        guard isUsable(version.etag) else {
            throw .invalidResponse("a version of \(file) has an unusable etag \(version.etag.prefix(80).debugDescription)")
        }
        guard (0...ProviderItem.maximumSize).contains(version.size) else {
            throw .invalidResponse("version \(version.etag) of \(file) has an impossible size \(version.size)")
        }
        guard version.modifiedAt.microseconds >= 0, version.modifiedAt <= ResponseValidation.latestLockTime else {
            throw .invalidResponse("version \(version.etag) of \(file) has an impossible time \(version.modifiedAt.rfc3339)")
        }
        // The author is only shown: one that cannot be is left out, not the version.
        let author = version.modifiedBy
        let shown = author.isEmpty || author.utf8.count > maximumAuthorBytes
            || author.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) ? nil : author
        return ItemVersion(identifier: version.etag, size: version.size, modified: version.modifiedAt, modifiedBy: shown)
    }
}
