/// What libxml2's callbacks reach through their context pointer: the parse state as one
/// value, in memory of its own. `state` reaches it through that memory's address, which the
/// runtime does not check for exclusive access: a stored property of a class is checked on
/// every access (a thread-local lookup), and the callbacks make about fifty accesses per
/// listed entry. Nothing else can reach the memory, and libxml2 makes one callback at a time
/// on the parsing thread, so no two accesses overlap.
final class ParseContext {
    private let storage: UnsafeMutablePointer<ParseState>

    init(_ state: ParseState) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: state)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    var state: ParseState {
        unsafeAddress { UnsafePointer(storage) }
        unsafeMutableAddress { storage }
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
