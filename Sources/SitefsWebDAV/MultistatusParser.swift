// Not Foundation: libxml2's headers bring the system's ICU, which clashes with the one
// Foundation carries. Kept out of this module's interface, so its clients may import both.
internal import CLibXML2

/// Parses a WebDAV multistatus body (RFC 4918 §13, §14.16) as it arrives, with libxml2's
/// push parser: `feed` takes each chunk the network delivers and `onResponse` hears every
/// `DAV:response` as soon as its end tag has come, so a 100,000-entry listing is never held
/// whole, as text or as a tree.
///
/// Hostile bodies are refused, never followed: no DTD is accepted (so no entity can expand
/// and no external one is loaded; libxml2 is also told not to touch the network), nesting
/// deeper than `Limits.depth`, text longer than `Limits.textBytes` in one element and more
/// than `Limits.responses` responses end the parse with an error. Elements this does not
/// know are skipped; properties are matched by namespace and local name, whatever prefix
/// the server chose.
public final class MultistatusParser {
    public struct Limits: Sendable {
        /// Elements open at once. A multistatus needs 6 (multistatus, response, propstat,
        /// prop, a property, a value inside it such as `collection`).
        public var depth = 32
        /// Bytes of text in one element (an href, a display name, an ETag).
        public var textBytes = 64 << 10
        /// Responses in one body.
        public var responses = 1_000_000
        /// Bytes in the whole body: what bounds a server sending endless whitespace or
        /// elements this skips, which no other limit counts. 1 GiB is about a million
        /// verbose responses.
        public var bodyBytes = 1 << 30

        public init(depth: Int = 32, textBytes: Int = 64 << 10, responses: Int = 1_000_000, bodyBytes: Int = 1 << 30) {
            self.depth = depth
            self.textBytes = textBytes
            self.responses = responses
            self.bodyBytes = bodyBytes
        }
    }

    /// What the callbacks reach (`Unmanaged`, through libxml2's context pointer).
    private let parse: ParseContext
    private var context: xmlParserCtxtPtr?
    private var handler = xmlSAXHandler()
    /// Bytes fed so far: an empty body is no multistatus (not a malformed one).
    private var fed = 0

    /// `onResponse` is called on the caller's thread, from inside `feed` or `finish`.
    public convenience init(limits: Limits = Limits(), onResponse: @escaping (DAVResponse) -> Void) {
        self.init(document: .multistatus, limits: limits, onResponse: onResponse)
    }

    init(document: ParseState.Document, limits: Limits, onResponse: @escaping (DAVResponse) -> Void) {
        parse = ParseContext(ParseState(limits: limits, document: document, onResponse: onResponse))
        handler.initialized = sitefs_xml_sax2_magic()
        handler.startElementNs = { context, localName, _, namespace, _, _, _, _, _ in
            ParseContext.from(context)?.state.start(namespace: namespace, localName: localName)
        }
        handler.endElementNs = { context, _, _, _ in ParseContext.from(context)?.state.end() }
        handler.characters = { context, bytes, count in ParseContext.from(context)?.state.text(bytes, Int(count)) }
        handler.cdataBlock = { context, bytes, count in ParseContext.from(context)?.state.text(bytes, Int(count)) }
        // Any DOCTYPE at all: a multistatus has none, and one is how entity bombs and
        // external entities get in.
        handler.internalSubset = { context, _, _, _ in ParseContext.from(context)?.state.fail(.doctype) }
        handler.externalSubset = { context, _, _, _ in ParseContext.from(context)?.state.fail(.doctype) }
        handler.entityDecl = { context, _, _, _, _, _ in ParseContext.from(context)?.state.fail(.doctype) }
    }

    deinit {
        if let context { xmlFreeParserCtxt(context) }
    }

    /// Parses the next chunk of the body.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(DAVParseError) {
        try push(bytes, terminate: false)
    }

    public func feed(_ bytes: [UInt8]) throws(DAVParseError) {
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(DAVParseError) in try push(buffer, terminate: false) } }
        try result.get()
    }

    /// The body has ended: anything left open is an error.
    public func finish() throws(DAVParseError) {
        if let failure = parse.state.failure { throw failure }
        guard fed > 0 else { throw .notMultistatus }
        try push(UnsafeRawBufferPointer(start: nil, count: 0), terminate: true)
        guard parse.state.sawMultistatus else { throw .notMultistatus }
    }

    private func push(_ bytes: UnsafeRawBufferPointer, terminate: Bool) throws(DAVParseError) {
        if let failure = parse.state.failure { throw failure }
        fed += bytes.count
        guard fed <= parse.state.limits.bodyBytes else { throw .tooLarge }
        var offset = 0
        repeat {
            // libxml2 takes an int count: large chunks go in pieces.
            let count = min(bytes.count - offset, 1 << 20)
            let chunk = bytes.baseAddress.map { UnsafeRawPointer($0 + offset).assumingMemoryBound(to: CChar.self) }
            let last = terminate && offset + count == bytes.count
            let code: Int32
            if let context {
                code = xmlParseChunk(context, chunk, Int32(count), last ? 1 : 0)
            } else {
                // The first chunk creates the parser (it sniffs the encoding from it).
                let created = withUnsafeMutablePointer(to: &handler) { handler in
                    xmlCreatePushParserCtxt(handler, Unmanaged.passUnretained(parse).toOpaque(), chunk, Int32(count), nil)
                }
                guard let created else { throw .malformed("the XML parser could not be created") }
                context = created
                parse.state.stop = { xmlStopParser(created) }
                // No network, no entity substitution, no DTD loading; huge inputs stay refused.
                xmlCtxtUseOptions(created, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
                code = last ? xmlParseChunk(created, nil, 0, 1) : 0
            }
            if let failure = parse.state.failure { throw failure }
            if code != 0 { throw .malformed(Self.lastError(of: context)) }
            offset += count
        } while offset < bytes.count
    }

    private static func lastError(of context: xmlParserCtxtPtr?) -> String {
        guard let context, let error = xmlCtxtGetLastError(context), let message = error.pointee.message else {
            return "not well-formed XML"
        }
        let text = String(cString: message).trimmed
        return "line \(error.pointee.line): \(text)"
    }
}

/// Why a multistatus body was refused.
public enum DAVParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    case doctype
    case tooDeep
    case textTooLong
    case tooManyResponses
    case tooLarge
    case notMultistatus

    public var description: String {
        switch self {
        case .malformed(let why): "malformed multistatus: \(why)"
        case .doctype: "a multistatus with a DOCTYPE (refused: entities are not expanded)"
        case .tooDeep: "a multistatus nested deeper than any server needs"
        case .textTooLong: "a multistatus element with more text than any property needs"
        case .tooManyResponses: "a multistatus with more responses than the limit"
        case .tooLarge: "a multistatus body larger than the limit"
        case .notMultistatus: "the body is not a DAV:multistatus (nor, answering a LOCK, a DAV:prop)"
        }
    }
}
