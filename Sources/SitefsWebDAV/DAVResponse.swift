/// One `DAV:response` of a multistatus: a resource and what the server said of its
/// properties. Values are the server's text, unchecked: `DAVHref` and the backend validate
/// them before anything is shown.
public struct DAVResponse: Equatable, Sendable {
    /// `DAV:href`, as sent (percent-encoded, absolute path or full URL).
    public var href = ""
    /// A status for the whole response (`DAV:response/DAV:status`): set instead of
    /// propstats when the server could not answer for this resource at all.
    public var status: Int?
    /// The properties the server gave with a 2xx status; those it reported missing or
    /// forbidden are left out.
    public var properties = DAVProperties()
    /// Properties reported with a status other than 2xx, in the order the server gave them.
    /// A listing never reads them (Apache reports every property it lacks, for every
    /// entry), so they are kept as the parser met them; `failedProperties` names them.
    public var failed: [DAVFailedProperty] = []

    public init() {}

    /// The properties reported with a status other than 2xx, by name ("DAV:getetag"); a
    /// name reported twice has its last status.
    public var failedProperties: [String: Int] {
        Dictionary(failed.map { ($0.namespace + $0.name, $0.status) }, uniquingKeysWith: { _, last in last })
    }
}

/// A property the server reported with a status other than 2xx.
public struct DAVFailedProperty: Equatable, Sendable {
    public var namespace: String
    public var name: String
    public var status: Int
}

/// The live properties sitefs asks for (RFC 4918 §15) and the owncloud file id.
public struct DAVProperties: Equatable, Sendable {
    public var displayName: String?
    public var contentLength: String?
    public var contentType: String?
    public var lastModified: String?
    public var etag: String?
    public var isCollection = false
    /// `oc:fileid` (Nextcloud, ownCloud): stable across renames.
    public var fileID: String?
    /// `DAV:lockdiscovery`: the locks held on the resource (none when it is free, or the
    /// server does not lock).
    public var locks: [DAVActiveLock] = []
    /// `urn:sitefs:mode`: permission bits sitefs set as a dead property (server text,
    /// unchecked; `SitefsDeadProperties.mode(from:)` checks it).
    public var mode: String?
    /// `urn:sitefs:symlink-target`: a link's target, percent-encoded (unchecked; see
    /// `SitefsDeadProperties.symlinkTarget(from:)`).
    public var symlinkTarget: String?

    public init() {}
}

/// The namespaces whose properties are read.
enum DAVNamespace {
    static let dav = "DAV:"
    static let owncloud = "http://owncloud.org/ns"
    static let sitefs = SitefsDeadProperties.namespace
}

extension DAVProperties {
    /// Takes what `other` has (a response may split its properties over several 2xx
    /// propstats).
    mutating func merge(_ other: DAVProperties) {
        displayName = other.displayName ?? displayName
        contentLength = other.contentLength ?? contentLength
        contentType = other.contentType ?? contentType
        lastModified = other.lastModified ?? lastModified
        etag = other.etag ?? etag
        isCollection = isCollection || other.isCollection
        fileID = other.fileID ?? fileID
        mode = other.mode ?? mode
        symlinkTarget = other.symlinkTarget ?? symlinkTarget
        if !other.locks.isEmpty { locks = other.locks }
    }
}

extension String {
    /// Without the whitespace around it (XML text often carries the document's indentation).
    var trimmed: String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
