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

/// A name the parser acts on. Each distinct name of a parse is recognized once, when
/// `InternedNames` first meets it, so the callbacks tell elements apart by this number
/// instead of comparing strings: a listing of 100,000 entries opens and closes some three
/// million elements. A local name is only what it says in the namespace that gives it
/// meaning (`fileid` in owncloud's, `mode` in sitefs's); the parser checks both.
enum KnownName: UInt8 {
    case other
    case davNamespace, owncloudNamespace, sitefsNamespace
    case multistatus, response, href, status, propstat, prop, resourcetype, collection, lockdiscovery
    case displayname, getcontentlength, getcontenttype, getlastmodified, getetag
    case fileid, mode, symlinkTarget

    init(_ text: String) {
        switch text {
        case DAVNamespace.dav: self = .davNamespace
        case DAVNamespace.owncloud: self = .owncloudNamespace
        case DAVNamespace.sitefs: self = .sitefsNamespace
        case "multistatus": self = .multistatus
        case "response": self = .response
        case "href": self = .href
        case "status": self = .status
        case "propstat": self = .propstat
        case "prop": self = .prop
        case "resourcetype": self = .resourcetype
        case "collection": self = .collection
        case "lockdiscovery": self = .lockdiscovery
        case "displayname": self = .displayname
        case "getcontentlength": self = .getcontentlength
        case "getcontenttype": self = .getcontenttype
        case "getlastmodified": self = .getlastmodified
        case "getetag": self = .getetag
        case "fileid": self = .fileid
        case SitefsDeadProperties.mode: self = .mode
        case SitefsDeadProperties.symlinkTarget: self = .symlinkTarget
        default: self = .other
        }
    }
}

/// A namespace or local name as libxml2 handed it, and what the parser knows it as.
struct XMLName {
    let text: String
    let known: KnownName
}

/// An element open now.
struct OpenElement {
    let namespace: XMLName
    let localName: XMLName

    /// Whether it is DAV:`name`.
    func isDAV(_ name: KnownName) -> Bool {
        namespace.known == .davNamespace && localName.known == name
    }

    var names: (String, String) { (namespace.text, localName.text) }
}

/// What libxml2's callbacks reach through their context pointer: the parse state as one
/// value. Each callback then makes one exclusivity-checked access to it, where a class with
/// the state's fields made one per field touched (a fifth of the parser's time in a large
/// listing went to those checks).
final class ParseContext {
    var state: ParseState

    init(_ state: ParseState) {
        self.state = state
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> ParseContext? {
        guard let context else { return nil }
        return Unmanaged<ParseContext>.fromOpaque(context).takeUnretainedValue()
    }
}

/// The parser's state between libxml2's callbacks: the element path, the text of the
/// element open now, and the response being assembled. Once it has failed, every callback
/// is ignored.
struct ParseState {
    /// What the body is: a multistatus (PROPFIND, and DELETE or MOVE failing in part), or
    /// a LOCK answer (RFC 4918 §9.10.1: a `DAV:prop` with the `DAV:lockdiscovery`), which
    /// is handed on as one response with no href and only its locks.
    enum Document {
        case multistatus, lockAnswer
    }

    let limits: MultistatusParser.Limits
    let document: Document
    private let onResponse: (DAVResponse) -> Void
    /// Every open element, outermost first.
    private var path: [OpenElement] = []
    private var text: [UInt8] = []
    private var response: DAVResponse?
    /// The propstat open now: its properties, and its status once read.
    private var propstat: (properties: DAVProperties, status: Int?)?
    /// The properties named in the open propstat, reported as failed if its status is not
    /// 2xx. One buffer for the whole parse: emptied when a propstat opens.
    private var propstatNames: [OpenElement] = []
    private var responses = 0
    /// The `DAV:lockdiscovery` being read, if one is open.
    private var locks = ActiveLockReader()
    /// Element and namespace names by libxml2's pointer to them.
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

    mutating func fail(_ error: DAVParseError) {
        guard failure == nil else { return }
        failure = error
        stop?()  // libxml2 reads no further, not even the rest of this chunk
    }

    /// An element opened, named as libxml2 hands names (see `InternedNames`).
    mutating func start(namespace: UnsafePointer<UInt8>?, localName: UnsafePointer<UInt8>?) {
        guard failure == nil else { return }
        start(OpenElement(namespace: names.name(namespace), localName: names.name(localName)))
    }

    private mutating func start(_ element: OpenElement) {
        guard path.count < limits.depth else { return fail(.tooDeep) }
        if path.isEmpty {
            guard element.isDAV(document == .multistatus ? .multistatus : .prop) else { return fail(.notMultistatus) }
            sawMultistatus = true
        }
        if locks.isReading {
            locks.start(namespace: element.namespace.text, localName: element.localName.text, depth: path.count + 1,
                        parent: path.last?.names, parentText: text)
        }
        path.append(element)
        text.removeAll(keepingCapacity: true)
        guard element.namespace.known == .davNamespace else { return }
        if element.localName.known == .lockdiscovery, isLockDiscovery(at: path.count) { return locks.begin(at: path.count) }
        guard document == .multistatus else { return }
        switch (element.localName.known, path.count) {
        case (.response, 2):
            guard responses < limits.responses else { return fail(.tooManyResponses) }
            response = DAVResponse()
        case (.propstat, 3):
            propstat = (DAVProperties(), nil)
            propstatNames.removeAll(keepingCapacity: true)
        case (.collection, 6) where isIn(.resourcetype, at: 5) && isIn(.prop, at: 4):
            propstat?.properties.isCollection = true
        default:
            break
        }
    }

    mutating func text(_ bytes: UnsafePointer<UInt8>?, _ count: Int) {
        guard failure == nil, let bytes, count > 0 else { return }
        guard text.count + count <= limits.textBytes else { return fail(.textTooLong) }
        text.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    }

    mutating func end() {
        guard failure == nil, let element = path.popLast() else { return }
        let depth = path.count + 1
        // The element's text is decoded only where a value is kept: most elements of a
        // multistatus hold indentation only.
        defer { text.removeAll(keepingCapacity: true) }
        if locks.isReading, !locks.ends(at: depth) {
            return locks.end(namespace: element.namespace.text, localName: element.localName.text, depth: depth,
                             parent: path.last?.names, text: text)
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
        if depth == 5, isIn(.prop, at: 4) {
            // A property: kept in the open propstat until its status says whether it counts.
            if propstat != nil { propstatNames.append(element) }
            return record(element)
        }
        guard element.namespace.known == .davNamespace else { return }
        switch (element.localName.known, depth) {
        case (.href, 3):
            response?.href = Self.trimmedText(text)
        case (.status, 3):
            response?.status = Self.statusCode(text)
        case (.status, 4) where isIn(.propstat, at: 3):
            propstat?.status = Self.statusCode(text)
        case (.propstat, 3):
            guard response != nil, let done = propstat.take() else { break }
            let status = done.status ?? 0
            if (200..<300).contains(status) {
                response?.properties.merge(done.properties)
            } else {
                for name in propstatNames {
                    response?.failed.append(DAVFailedProperty(namespace: name.namespace.text, name: name.localName.text, status: status))
                }
            }
        case (.response, 2):
            guard let done = response.take() else { break }
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
        case .multistatus: depth == 5 && isIn(.prop, at: 4) && isIn(.propstat, at: 3)
        case .lockAnswer: depth == 2
        }
    }

    /// True when the open element at 1-based `depth` is DAV:`name`.
    private func isIn(_ name: KnownName, at depth: Int) -> Bool {
        guard depth >= 1, depth <= path.count else { return false }
        return path[depth - 1].isDAV(name)
    }

    /// Keeps a property's value (the element's text) in the open propstat.
    private mutating func record(_ element: OpenElement) {
        guard propstat != nil else { return }
        switch (element.namespace.known, element.localName.known) {
        case (.davNamespace, .displayname): propstat?.properties.displayName = String(decoding: text, as: UTF8.self)
        case (.davNamespace, .getcontentlength): propstat?.properties.contentLength = Self.trimmedText(text)
        case (.davNamespace, .getcontenttype): propstat?.properties.contentType = Self.trimmedText(text)
        case (.davNamespace, .getlastmodified): propstat?.properties.lastModified = Self.trimmedText(text)
        case (.davNamespace, .getetag): propstat?.properties.etag = Self.trimmedText(text)
        case (.owncloudNamespace, .fileid): propstat?.properties.fileID = Self.trimmedText(text)
        case (.sitefsNamespace, .mode): propstat?.properties.mode = Self.trimmedText(text)
        case (.sitefsNamespace, .symlinkTarget): propstat?.properties.symlinkTarget = Self.trimmedText(text)
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

/// The element and namespace names of one parse, made into strings and recognized once
/// each: a listing names the same dozen elements 100,000 times. libxml2 hands names out of
/// its dictionary, so one name keeps one address for the parser's life; a hit is still
/// checked byte for byte, so a name at a reused address can never be taken for another. At
/// most `capacity` names are kept (a body of endless distinct names costs its strings, not
/// a growing table).
struct InternedNames {
    static let capacity = 32
    private var known: [(address: UnsafePointer<UInt8>, bytes: [UInt8], name: XMLName)] = []

    mutating func name(_ text: UnsafePointer<UInt8>?) -> XMLName {
        guard let text else { return XMLName(text: "", known: .other) }
        var length = 0
        while text[length] != 0 { length += 1 }
        let bytes = UnsafeBufferPointer(start: text, count: length)
        if let hit = known.first(where: { $0.address == text }), hit.bytes.count == length, hit.bytes.elementsEqual(bytes) {
            return hit.name
        }
        let string = String(decoding: bytes, as: UTF8.self)
        let name = XMLName(text: string, known: KnownName(string))
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
