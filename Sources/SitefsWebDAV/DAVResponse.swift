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
    /// Properties reported with a status other than 2xx, by name ("DAV:getetag"), for the
    /// log: a server that hides ETags says so here.
    public var failedProperties: [String: Int] = [:]

    public init() {}
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

/// The parser's state between libxml2's callbacks: the element path, the text of the
/// element open now, and the response being assembled.
final class ParseState {
    /// What the body is: a multistatus (PROPFIND, and DELETE or MOVE failing in part), or
    /// a LOCK answer (RFC 4918 §9.10.1: a `DAV:prop` with the `DAV:lockdiscovery`), which
    /// is handed on as one response with no href and only its locks.
    enum Document {
        case multistatus, lockAnswer
    }

    let limits: MultistatusParser.Limits
    let document: Document
    private let onResponse: (DAVResponse) -> Void
    /// (namespace, local name) of every open element, outermost first.
    private var path: [(String, String)] = []
    private var text: [UInt8] = []
    private var response: DAVResponse?
    /// The propstat open now: its properties, and its status once read.
    private var propstat: (properties: DAVProperties, names: [(String, String)], status: Int?)?
    private var responses = 0
    /// The `DAV:lockdiscovery` being read, if one is open.
    private var locks = ActiveLockReader()
    /// Element and namespace names by libxml2's pointer to them (see `name(_:)`).
    private var names = InternedNames()
    /// Whether the root was the document's (`multistatus`, or `prop` for a LOCK answer).
    private(set) var sawMultistatus = false
    private(set) var failure: DAVParseError?
    /// Set by the parser once it exists, so a failure can stop it at once.
    var stop: (() -> Void)?

    init(limits: MultistatusParser.Limits, document: Document = .multistatus, onResponse: @escaping (DAVResponse) -> Void) {
        self.limits = limits
        self.document = document
        self.onResponse = onResponse
    }

    /// The name libxml2 hands a callback, as a string (see `InternedNames`).
    func name(_ text: UnsafePointer<UInt8>?) -> String {
        names.name(text)
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> ParseState? {
        guard let context else { return nil }
        let state = Unmanaged<ParseState>.fromOpaque(context).takeUnretainedValue()
        return state.failure == nil ? state : nil
    }

    func fail(_ error: DAVParseError) {
        guard failure == nil else { return }
        failure = error
        stop?()  // libxml2 reads no further, not even the rest of this chunk
    }

    func start(namespace: String, localName: String) {
        guard path.count < limits.depth else { return fail(.tooDeep) }
        if path.isEmpty {
            let root = document == .multistatus ? "multistatus" : "prop"
            guard namespace == DAVNamespace.dav, localName == root else { return fail(.notMultistatus) }
            sawMultistatus = true
        }
        if locks.isReading {
            locks.start(namespace: namespace, localName: localName, depth: path.count + 1, parent: path.last, parentText: text)
        }
        path.append((namespace, localName))
        text.removeAll(keepingCapacity: true)
        guard namespace == DAVNamespace.dav else { return }
        if localName == "lockdiscovery", isLockDiscovery(at: path.count) { return locks.begin(at: path.count) }
        guard document == .multistatus else { return }
        switch (localName, path.count) {
        case ("response", 2):
            guard responses < limits.responses else { return fail(.tooManyResponses) }
            response = DAVResponse()
        case ("propstat", 3):
            propstat = (DAVProperties(), [], nil)
        case ("collection", 6) where isIn("resourcetype", at: 5) && isIn("prop", at: 4):
            propstat?.properties.isCollection = true
        default:
            break
        }
    }

    func text(_ bytes: UnsafePointer<UInt8>?, _ count: Int) {
        guard let bytes, count > 0 else { return }
        guard text.count + count <= limits.textBytes else { return fail(.textTooLong) }
        text.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    }

    func end() {
        guard let (namespace, localName) = path.last else { return }
        let depth = path.count
        path.removeLast()
        // The element's text is decoded only where a value is kept: most elements of a
        // multistatus hold indentation only.
        defer { text.removeAll(keepingCapacity: true) }
        if locks.isReading, !locks.ends(at: depth) {
            return locks.end(namespace: namespace, localName: localName, depth: depth, parent: path.last, text: text)
        }
        if locks.isReading {
            let found = locks.finish()
            if document == .lockAnswer {
                var answer = DAVResponse()
                answer.properties.locks = found
                return onResponse(answer)
            }
            propstat?.properties.locks = found
        }
        guard document == .multistatus else { return }
        if depth == 5, isIn("prop", at: 4) {
            // A property: kept in the open propstat until its status says whether it counts.
            propstat?.names.append((namespace, localName))
            return record(namespace: namespace, localName: localName)
        }
        guard namespace == DAVNamespace.dav else { return }
        switch (localName, depth) {
        case ("href", 3):
            response?.href = Self.trimmedText(text)
        case ("status", 3):
            response?.status = Self.statusCode(text)
        case ("status", 4) where isIn("propstat", at: 3):
            propstat?.status = Self.statusCode(text)
        case ("propstat", 3):
            guard let done = propstat, response != nil else { break }
            propstat = nil
            let status = done.status ?? 0
            if (200..<300).contains(status) {
                response?.properties.merge(done.properties)
            } else {
                for (namespace, localName) in done.names { response?.failedProperties[namespace + localName] = status }
            }
        case ("response", 2):
            guard let done = response else { break }
            response = nil
            responses += 1
            onResponse(done)
        default:
            break
        }
    }

    /// Whether a `DAV:lockdiscovery` opened at `depth` is the resource's property: inside a
    /// multistatus's `response/propstat/prop`, or a LOCK answer's root `prop`.
    private func isLockDiscovery(at depth: Int) -> Bool {
        switch document {
        case .multistatus: depth == 5 && isIn("prop", at: 4) && isIn("propstat", at: 3)
        case .lockAnswer: depth == 2
        }
    }

    /// True when the open element at 1-based `depth` is DAV:`name`.
    private func isIn(_ name: String, at depth: Int) -> Bool {
        guard depth >= 1, depth <= path.count else { return false }
        return path[depth - 1].0 == DAVNamespace.dav && path[depth - 1].1 == name
    }

    /// Keeps a property's value (the open element's text) in the open propstat.
    private func record(namespace: String, localName: String) {
        switch (namespace, localName) {
        case (DAVNamespace.dav, "displayname"): propstat?.properties.displayName = String(decoding: text, as: UTF8.self)
        case (DAVNamespace.dav, "getcontentlength"): propstat?.properties.contentLength = Self.trimmedText(text)
        case (DAVNamespace.dav, "getcontenttype"): propstat?.properties.contentType = Self.trimmedText(text)
        case (DAVNamespace.dav, "getlastmodified"): propstat?.properties.lastModified = Self.trimmedText(text)
        case (DAVNamespace.dav, "getetag"): propstat?.properties.etag = Self.trimmedText(text)
        case (DAVNamespace.owncloud, "fileid"): propstat?.properties.fileID = Self.trimmedText(text)
        case (DAVNamespace.sitefs, SitefsDeadProperties.mode): propstat?.properties.mode = Self.trimmedText(text)
        case (DAVNamespace.sitefs, SitefsDeadProperties.symlinkTarget): propstat?.properties.symlinkTarget = Self.trimmedText(text)
        default: break
        }
    }

    /// Text without the XML whitespace around it, decoded once (no intermediate string).
    static func trimmedText(_ bytes: [UInt8]) -> String {
        guard let first = bytes.firstIndex(where: { !isXMLSpace($0) }), let last = bytes.lastIndex(where: { !isXMLSpace($0) }) else {
            return ""
        }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    private static func isXMLSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// The code of an HTTP status line ("HTTP/1.1 404 Not Found"); nil if it is not one.
    static func statusCode(_ line: String) -> Int? {
        statusCode(Array(line.utf8))
    }

    /// As `statusCode(_:)`, read from the line's bytes: "HTTP/" then anything up to a space,
    /// then exactly three digits (100...599), then a space or only whitespace to the end.
    static func statusCode(_ line: [UInt8]) -> Int? {
        var index = line.startIndex
        while index < line.endIndex, isXMLSpace(line[index]) { index += 1 }
        let version = Array("HTTP/".utf8)
        guard line.endIndex - index >= version.count, line[index..<(index + version.count)].elementsEqual(version) else { return nil }
        guard let space = line[index...].firstIndex(of: 0x20) else { return nil }
        index = space
        while index < line.endIndex, line[index] == 0x20 { index += 1 }
        var code = 0
        var digits = 0
        while index < line.endIndex, digits < 4, (0x30...0x39).contains(line[index]) {
            code = code * 10 + Int(line[index] - 0x30)
            digits += 1
            index += 1
        }
        guard digits == 3, line[index...].first.map({ $0 == 0x20 }) ?? true || line[index...].allSatisfy(isXMLSpace),
              (100...599).contains(code) else { return nil }
        return code
    }
}

/// The element and namespace names of one parse, made into strings once each: a listing
/// names the same dozen elements 100,000 times. libxml2 hands names out of its dictionary,
/// so one name keeps one address for the parser's life; a hit is still checked byte for
/// byte, so a name at a reused address can never be taken for another. At most `capacity`
/// names are kept (a body of endless distinct names costs its strings, not a growing table).
struct InternedNames {
    static let capacity = 32
    private var known: [(address: UnsafePointer<UInt8>, bytes: [UInt8], name: String)] = []

    mutating func name(_ text: UnsafePointer<UInt8>?) -> String {
        guard let text else { return "" }
        var length = 0
        while text[length] != 0 { length += 1 }
        let bytes = UnsafeBufferPointer(start: text, count: length)
        if let hit = known.first(where: { $0.address == text }), hit.bytes.elementsEqual(bytes) { return hit.name }
        let name = String(decoding: bytes, as: UTF8.self)
        if known.count < Self.capacity { known.append((text, Array(bytes), name)) }
        return name
    }
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
