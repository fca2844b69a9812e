import GRDB

/// Uploads answered without a tag (see `UploadTag`): their versions, kept with the node.
extension IdentityTable {
    /// The tag the server knows `version` of `node` by: the version itself, except for an
    /// upload's own, which is the tag a sighting found for it; nil while none has (or when
    /// the node's upload is another one now).
    public func wireTag(for version: String, of node: Node) throws -> String? {
        guard UploadTag.isUploadVersion(version) else { return version }
        return try queue.inDatabase { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT put_tag FROM nodes WHERE id = ? AND put_version = ?"),
                                arguments: [node, version])
        }
    }

    /// The version to show for `node` where the server reports `tag` for it outside a
    /// PROPFIND (a GET's answer), judged as a listing's sighting is.
    public func shownVersion(of node: Node, tag: String, size: Int64?, seconds: Int64?) throws -> String {
        // Read first: almost every node has no upload waiting, and a write would cost a commit.
        guard try queue.inDatabase({ db in try Self.upload(of: node, db) }) != nil else { return tag }
        return try write { db in
            let sighting = Sighting(name: "", isCollection: false, version: tag, size: size, seconds: seconds)
            return try Self.judge(Self.upload(of: node, db), of: node, sighting, db) ?? tag
        }
    }

    /// The upload waiting in a row read by `found` (columns 6 to 10); nil for none or for
    /// values that cannot be one.
    static func upload(in row: Row, from first: Int = 6) -> UploadTag? {
        guard let version = row[first] as String?, let size = row[first + 1] as Int64?,
              let earliest = row[first + 2] as Int64?, let latest = row[first + 3] as Int64?, earliest <= latest
        else { return nil }
        return UploadTag(version: version, size: size, seconds: earliest...latest, tag: row[first + 4])
    }

    static func upload(of node: Node, _ db: Database) throws -> UploadTag? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT put_version, put_size, put_earliest, put_latest, put_tag FROM nodes WHERE id = ?"),
                         arguments: [node]).flatMap { upload(in: $0, from: 0) }
    }

    /// What `sighting` makes of the upload waiting for `node`: its version while the server
    /// holds its content (the tag recorded when this sighting found it), nil otherwise, the
    /// upload then forgotten. A sighting without a version (a name placed, not listed)
    /// changes nothing.
    static func judge(_ upload: UploadTag?, of node: Node, _ sighting: Sighting, _ db: Database) throws -> String? {
        guard let upload, sighting.version != nil else { return nil }
        switch upload.judge(tag: sighting.version, size: sighting.size, seconds: sighting.seconds) {
        case .upload(let adopt):
            if let adopt {
                try db.cachedStatement(sql: "UPDATE nodes SET put_tag = ? WHERE id = ?").execute(arguments: [adopt, node])
            }
            return upload.version
        case .superseded:
            try db.cachedStatement(sql: """
                UPDATE nodes SET put_version = NULL, put_size = NULL, put_earliest = NULL, put_latest = NULL, put_tag = NULL WHERE id = ?
                """).execute(arguments: [node])
            return nil
        }
    }
}
