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

/// The element and namespace names of one parse, made into strings and recognized once
/// each: a listing names the same dozen elements 100,000 times. libxml2 hands names out of
/// its dictionary, so one name keeps one address for the parser's life; a hit is still
/// checked byte for byte, so a name at a reused address can never be taken for another. At
/// most `capacity` names are kept (a body of endless distinct names costs its strings, not
/// a growing table).
///
/// A hit costs a scan of a few addresses and one pass over the name's bytes, stopping at the
/// first that differs. Two calls per element make some thirty-six per entry of an Apache
/// listing: measuring each name first and comparing it through `Sequence` cost about 6% of
/// the daemon's instructions in a cold listing.
struct InternedNames {
    static let capacity = 32
    private var known: [(address: UnsafePointer<UInt8>, bytes: [UInt8], name: XMLName)] = []

    mutating func name(_ text: UnsafePointer<UInt8>?) -> XMLName {
        guard let text else { return XMLName(text: "", known: .other) }
        // By index: iterating the entries would copy each, retaining its array and string.
        for index in known.indices where known[index].address == text && Self.spells(text, known[index].bytes) {
            return known[index].name
        }
        var length = 0
        while text[length] != 0 { length += 1 }
        let bytes = UnsafeBufferPointer(start: text, count: length)
        let string = String(decoding: bytes, as: UTF8.self)
        let name = XMLName(text: string, known: KnownName(string))
        if known.count < Self.capacity { known.append((text, Array(bytes), name)) }
        return name
    }

    /// Whether the NUL-terminated `text` is exactly `bytes`. `bytes` holds no NUL (it was
    /// measured up to one), so a shorter text differs at its terminator and nothing past
    /// that is read.
    private static func spells(_ text: UnsafePointer<UInt8>, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { stored in
            for index in stored.indices where text[index] != stored[index] { return false }
            return text[stored.count] == 0
        }
    }
}
