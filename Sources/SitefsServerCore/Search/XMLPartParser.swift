// CLibXML2 reads libxml2's headers without its ICU part (see Sources/CLibXML2/shim.h), so
// this module can import it beside Foundation. Kept out of the module's interface.
internal import CLibXML2

/// An element's expanded name: its namespace URI and local name, whatever prefix the
/// document chose.
struct XMLName: Hashable, Sendable {
    var namespace: String
    var localName: String

    init(_ namespace: String, _ localName: String) {
        self.namespace = namespace
        self.localName = localName
    }
}

/// What an XML part's elements and text are told to.
protocol XMLPartHandler: AnyObject {
    func start(_ name: XMLName) throws(ExtractionStop)
    func end(_ name: XMLName) throws(ExtractionStop)
    /// Character data (UTF-8, as libxml2 hands it over), in pieces of any length.
    func characters(_ text: UnsafeBufferPointer<UInt8>) throws(ExtractionStop)
}

/// One XML part of an office document (content.xml, word/document.xml, a slide), parsed as
/// its bytes are inflated with libxml2's push (SAX2) parser: `feed` takes each chunk and the
/// handler hears elements and text as they pass, so a part is never held whole, as bytes or
/// as a tree.
///
/// Hostile parts are refused, never followed: any DOCTYPE ends the parse (an office part has
/// none, and it is how entity expansion bombs and external entities get in); entities are
/// never substituted (no `XML_PARSE_NOENT`), so an undeclared reference is a well-formedness
/// error; libxml2 is told not to touch the network (`XML_PARSE_NONET`) and keeps its own
/// limits on nesting and name lengths (no `XML_PARSE_HUGE`). A handler's `ExtractionStop`
/// (the text is full, the time is up) stops the parser and is rethrown by `feed`.
final class XMLPartParser {
    /// The part's path in its zip, for messages.
    let part: String
    private let handler: XMLPartHandler
    private var sax = xmlSAXHandler()
    private var context: xmlParserCtxtPtr?
    private var fed = false
    /// Why the parse stopped, set from inside a callback (which cannot throw through C).
    fileprivate var stop: ExtractionStop?
    /// Namespace URIs as Swift strings, by libxml2's interned pointer: one conversion per
    /// namespace, not one per element.
    private var namespaces: [UnsafeRawPointer: String] = [:]

    /// libxml2 wants `xmlInitParser` once, before threads use it; Swift runs this once.
    private static let initialized: Void = xmlInitParser()

    init(part: String, handler: XMLPartHandler) {
        _ = Self.initialized
        self.part = part
        self.handler = handler
        sax.initialized = sitefs_xml_sax2_magic()
        sax.startElementNs = { context, localName, _, namespace, _, _, _, _, _ in
            XMLPartParser.from(context)?.started(namespace, localName)
        }
        sax.endElementNs = { context, localName, _, namespace in XMLPartParser.from(context)?.ended(namespace, localName) }
        sax.characters = { context, bytes, count in XMLPartParser.from(context)?.text(bytes, count) }
        sax.ignorableWhitespace = { context, bytes, count in XMLPartParser.from(context)?.text(bytes, count) }
        sax.cdataBlock = { context, bytes, count in XMLPartParser.from(context)?.text(bytes, count) }
        sax.internalSubset = { context, _, _, _ in XMLPartParser.from(context)?.refuseDoctype() }
        sax.externalSubset = { context, _, _, _ in XMLPartParser.from(context)?.refuseDoctype() }
        sax.entityDecl = { context, _, _, _, _, _ in XMLPartParser.from(context)?.refuseDoctype() }
    }

    deinit {
        if let context { xmlFreeParserCtxt(context) }
    }

    /// Parses the next chunk of the part.
    func feed(_ bytes: UnsafeRawBufferPointer) throws(ExtractionStop) {
        guard bytes.count > 0 else { return }
        try push(bytes, terminate: false)
    }

    /// The part has ended: anything left open is an error. An empty part has no text.
    func finish() throws(ExtractionStop) {
        guard fed else { return }
        try push(UnsafeRawBufferPointer(start: nil, count: 0), terminate: true)
    }

    private func push(_ bytes: UnsafeRawBufferPointer, terminate: Bool) throws(ExtractionStop) {
        if let stop { throw stop }
        var offset = 0
        repeat {
            // libxml2 takes an int count: large chunks go in pieces.
            let count = min(bytes.count - offset, 1 << 20)
            let chunk = bytes.baseAddress.map { ($0 + offset).assumingMemoryBound(to: CChar.self) }
            let last: Int32 = terminate && offset + count == bytes.count ? 1 : 0
            let code: Int32
            if let context {
                code = xmlParseChunk(context, chunk, Int32(count), last)
            } else {
                // The first chunk creates the parser (it sniffs the encoding from it).
                let created = withUnsafeMutablePointer(to: &sax) { sax in
                    xmlCreatePushParserCtxt(sax, Unmanaged.passUnretained(self).toOpaque(), chunk, Int32(count), nil)
                }
                guard let created else { throw .failed("\(part): the XML parser could not be created") }
                context = created
                fed = true
                // No network, no entity substitution, no DTD loading, libxml2's size limits kept.
                let options = XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue
                xmlCtxtUseOptions(created, Int32(options))
                code = last == 1 ? xmlParseChunk(created, nil, 0, 1) : 0
            }
            if let stop { throw stop }
            if code != 0 { throw .failed("\(part): not well-formed XML (\(lastError))") }
            offset += count
        } while offset < bytes.count
    }

    private var lastError: String {
        guard let context, let error = xmlCtxtGetLastError(context), let message = error.pointee.message else {
            return "no detail"
        }
        let text = String(cString: message).trimmingASCIIWhitespace
        return "line \(error.pointee.line): \(text)"
    }

    // MARK: Callbacks

    fileprivate static func from(_ context: UnsafeMutableRawPointer?) -> XMLPartParser? {
        guard let context else { return nil }
        let parser = Unmanaged<XMLPartParser>.fromOpaque(context).takeUnretainedValue()
        return parser.stop == nil ? parser : nil
    }

    private func name(_ namespace: UnsafePointer<xmlChar>?, _ localName: UnsafePointer<xmlChar>?) -> XMLName {
        let uri: String
        if let namespace {
            let key = UnsafeRawPointer(namespace)
            if let known = namespaces[key] {
                uri = known
            } else {
                uri = String(cString: namespace)
                // Interned by libxml2's dictionary for the parser's life; bounded anyway.
                if namespaces.count < 256 { namespaces[key] = uri }
            }
        } else {
            uri = ""
        }
        return XMLName(uri, localName.map { String(cString: $0) } ?? "")
    }

    fileprivate func started(_ namespace: UnsafePointer<xmlChar>?, _ localName: UnsafePointer<xmlChar>?) {
        run { () throws(ExtractionStop) in try handler.start(name(namespace, localName)) }
    }

    fileprivate func ended(_ namespace: UnsafePointer<xmlChar>?, _ localName: UnsafePointer<xmlChar>?) {
        run { () throws(ExtractionStop) in try handler.end(name(namespace, localName)) }
    }

    fileprivate func text(_ bytes: UnsafePointer<xmlChar>?, _ count: Int32) {
        guard let bytes, count > 0 else { return }
        run { () throws(ExtractionStop) in try handler.characters(UnsafeBufferPointer(start: bytes, count: Int(count))) }
    }

    fileprivate func refuseDoctype() {
        halt(.failed("\(part): has a DOCTYPE (refused: entities are never expanded)"))
    }

    private func run(_ body: () throws(ExtractionStop) -> Void) {
        do { try body() } catch { halt(error) }
    }

    private func halt(_ reason: ExtractionStop) {
        guard stop == nil else { return }
        stop = reason
        if let context { xmlStopParser(context) }
    }
}

extension String {
    /// Without leading and trailing ASCII whitespace (libxml2's messages end in a newline).
    fileprivate var trimmingASCIIWhitespace: String {
        String(self.drop(while: { $0.isASCII && $0.isWhitespace }).reversed().drop(while: { $0.isASCII && $0.isWhitespace }).reversed())
    }
}
