/// One `DAV:activelock` of a resource's `DAV:lockdiscovery` (RFC 4918 §14.1, §15.8): a lock
/// someone holds on it, as the server wrote it. Values are the server's text, unchecked: the
/// backend decides what they mean (`WebDAVActiveLocks`). What bounds them here is size: the
/// parser's text limit per element, `ActiveLockReader`'s limits on how many are kept. The one
/// exception is `requestID`, whose form is checked here: the backend only compares it with the
/// id it sent.
public struct DAVActiveLock: Equatable, Sendable {
    /// `locktoken/href` (`opaquelocktoken:…`, `urn:…`); nil when the server hides it.
    public var token: String?
    /// `timeout` ("Second-600", "Infinite"); nil when absent.
    public var timeout: String?
    /// `depth` ("0", "infinity"); nil when absent.
    public var depth: String?
    /// `lockroot/href`: where the lock was taken (a collection above, for an inherited lock).
    public var root: String?
    /// Whether the lock has a `DAV:owner` at all.
    public var hasOwner = false
    /// The owner's own text, not its child elements' (whitespace around it trimmed, at most
    /// `ActiveLockReader.maximumOwnerText` bytes): how most clients name the holder.
    public var ownerText = ""
    /// `owner/href`: how RFC 4918's examples name the holder (a URL, often `mailto:`).
    public var ownerHref: String?
    /// The owner's child elements in sitefs's namespace (`DAVActiveLock.sitefsNamespace`),
    /// by local name: what a sitefs mount writes about itself (account, name, device…).
    public var sitefsFields: [String: String] = [:]
    /// Not among `sitefsFields`: a sitefs mount's `request` element, the random id of the
    /// LOCK request that made the lock, by which the mount finds its own lock when the answer
    /// to that LOCK was lost. Only a value of `requestIDLength` base64url characters is kept
    /// (the first such element); anything else is nil.
    public var requestID: String?

    public init() {}

    /// How long a request id may be: a sitefs mount sends 22 characters (16 bytes); a few
    /// more or fewer are taken, so the sender may change its size.
    public static let requestIDLength = 16...64

    /// `text` when it can be a request id: `requestIDLength` characters of the base64url
    /// alphabet (RFC 4648 §5, no padding); else nil.
    public static func requestID(_ text: String) -> String? {
        let bytes = text.utf8
        let alphabet = { (byte: UInt8) in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
        }
        guard requestIDLength.contains(bytes.count), bytes.allSatisfy(alphabet) else { return nil }
        return text
    }

    /// The namespace of the elements a sitefs mount puts in a lock's `owner`, so another
    /// sitefs mount can tell who holds it, from where, since when. Other clients show the
    /// owner's text.
    public static let sitefsNamespace = "urn:sitefs:lock"
}

/// Collects the `DAV:activelock`s of one `DAV:lockdiscovery` as the parser passes its
/// elements, wherever the discovery sits (depth 5 in a multistatus, 2 in a LOCK answer).
/// Elements are placed relative to the discovery: 1 is an `activelock`, 2 its children
/// (`owner`, `timeout`, `locktoken`…), 3 theirs (`href`, sitefs's owner fields). Anything
/// deeper, or unknown, is skipped; so are locks beyond `maximumLocks` (a server has one
/// exclusive lock per resource; shared locks are few) and owner fields beyond
/// `maximumOwnerFields`, so a hostile answer costs a bounded amount per resource.
struct ActiveLockReader {
    static let maximumLocks = 8
    static let maximumOwnerText = 1024
    static let maximumOwnerFields = 8

    /// The depth of the `lockdiscovery` open now; nil outside one.
    private var discoveryDepth: Int?
    private var lock: DAVActiveLock?
    /// The owner's text so far: it comes in pieces around its children.
    private var ownerText: [UInt8] = []
    private var locks: [DAVActiveLock] = []

    var isReading: Bool { discoveryDepth != nil }

    /// A `DAV:lockdiscovery` opened at `depth`.
    mutating func begin(at depth: Int) {
        discoveryDepth = depth
        lock = nil
        locks = []
    }

    /// Whether the element that ended at `depth` is the discovery itself.
    func ends(at depth: Int) -> Bool { depth == discoveryDepth }

    /// The discovery ended: the locks read in it.
    mutating func finish() -> [DAVActiveLock] {
        discoveryDepth = nil
        lock = nil
        defer { locks = [] }
        return locks
    }

    /// An element opened at `depth` inside the discovery, under `parent`. `parentText` is
    /// the text its parent had until now: the owner's, when a child of the owner opens.
    mutating func start(namespace: String, localName: String, depth: Int, parent: (String, String)?, parentText: [UInt8]) {
        guard let base = discoveryDepth else { return }
        switch depth - base {
        case 1 where namespace == DAVNamespace.dav && localName == "activelock":
            lock = DAVActiveLock()
        case 2 where namespace == DAVNamespace.dav && localName == "owner":
            lock?.hasOwner = true
            ownerText = []
        case 3 where parent.map({ $0 == (DAVNamespace.dav, "owner") }) == true:
            appendOwnerText(parentText)
        default:
            break
        }
    }

    /// An element at `depth` ended with `text` (its own, not its children's); `parent` is
    /// the element around it.
    mutating func end(namespace: String, localName: String, depth: Int, parent: (String, String)?, text: [UInt8]) {
        guard let base = discoveryDepth, lock != nil else { return }
        let value = String(decoding: text, as: UTF8.self).trimmed
        switch depth - base {
        case 1 where namespace == DAVNamespace.dav && localName == "activelock":
            if let done = lock, locks.count < Self.maximumLocks { locks.append(done) }
            lock = nil
        case 2 where namespace == DAVNamespace.dav:
            switch localName {
            case "owner":
                appendOwnerText(text)
                lock?.ownerText = String(decoding: ownerText, as: UTF8.self).trimmed
            case "timeout": lock?.timeout = value
            case "depth": lock?.depth = value
            default: break
            }
        case 3:
            guard let (parentSpace, parentName) = parent, parentSpace == DAVNamespace.dav else { return }
            switch (parentName, namespace, localName) {
            case ("owner", DAVNamespace.dav, "href"): lock?.ownerHref = value
            case ("owner", DAVActiveLock.sitefsNamespace, "request"):
                if lock?.requestID == nil { lock?.requestID = DAVActiveLock.requestID(value) }
            case ("owner", DAVActiveLock.sitefsNamespace, _):
                if lock?.sitefsFields[localName] != nil || (lock?.sitefsFields.count ?? 0) < Self.maximumOwnerFields {
                    lock?.sitefsFields[localName] = value
                }
            case ("locktoken", DAVNamespace.dav, "href"): if lock?.token == nil { lock?.token = value }
            case ("lockroot", DAVNamespace.dav, "href"): lock?.root = value
            default: break
            }
        default:
            break
        }
    }

    private mutating func appendOwnerText(_ text: [UInt8]) {
        let room = Self.maximumOwnerText - ownerText.count
        guard room > 0, !text.isEmpty else { return }
        // Cut at a character boundary: a UTF-8 continuation byte never starts the rest.
        var end = min(room, text.count)
        while end < text.count, end > 0, text[end] & 0xC0 == 0x80 { end -= 1 }
        ownerText += text[..<end]
    }
}
