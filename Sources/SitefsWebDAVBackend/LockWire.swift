import Foundation
import SitefsAPI
import SitefsCrypto
import SitefsWebDAV

/// What a lock looks like on the wire (RFC 4918 §9.10, §10): the LOCK request's body and
/// headers, the token in a `Lock-Token` answer, the `If` header that carries tokens on writes,
/// and the timeouts both ways. Everything the server sends is checked here before use.
enum LockWire {
    /// The longest holder text sent or shown, in UTF-8 bytes.
    static let maximumTextBytes = 200
    /// The longest lock token accepted (Apache's and WsgiDAV's are under 100 bytes).
    static let maximumTokenBytes = 256
    /// The timeouts sent: at least a second, at most an hour (the holder refreshes).
    static let timeoutRange: ClosedRange<Int64> = 1...3600
    /// The longest timeout believed from a server: RFC 4918 §10.7 caps it at 2^32 - 1 s.
    static let maximumGrantedSeconds: Int64 = 4_294_967_295

    /// Who takes a lock, as the `owner` element says it (see `lockInfo`).
    struct Owner: Equatable {
        var account: String
        var name: String
        var device: String
        var application: String
        var since: Timestamp
        /// This LOCK request's own id (`newRequestID`): the server keeps it in the lock's
        /// owner, where the backend finds its lock when the answer was lost.
        var requestID: String
    }

    /// A fresh id for one LOCK request: 16 random bytes, base64url (22 characters). From
    /// `SecureRandom` not for secrecy (the id is shown to everyone in `lockdiscovery`) but so
    /// no two mounts or requests ever pick the same one, whatever their start-up state.
    static func newRequestID() -> String {
        Base64URL.encode(SecureRandom.bytes(count: 16))
    }

    /// The body of a new lock: an exclusive write lock whose `owner` names the holder as its
    /// text, which every WebDAV client shows as it is, followed by sitefs's elements, so
    /// another sitefs mount can tell account, name, device, program and time apart, and this
    /// one can tell the lock its request made (`request`).
    static func lockInfo(_ owner: Owner) -> [UInt8] {
        let shown = owner.name.isEmpty ? owner.account : owner.name
        let fields = [("account", owner.account), ("name", owner.name), ("device", owner.device),
                      ("application", owner.application), ("since", owner.since.rfc3339), ("request", owner.requestID)]
            .map { "<s:\($0.0)>\(XMLText.escaped(clean($0.1)))</s:\($0.0)>" }.joined()
        return Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <D:lockinfo xmlns:D="DAV:" xmlns:s="\(DAVActiveLock.sitefsNamespace)"><D:lockscope><D:exclusive/></D:lockscope>\
            <D:locktype><D:write/></D:locktype><D:owner>\(XMLText.escaped(clean(shown)))\(fields)</D:owner></D:lockinfo>
            """.utf8)
    }

    /// `Timeout: Second-N` for a lock asked to last `duration` (RFC 4918 §10.7), clamped to
    /// `timeoutRange`.
    static func timeoutHeader(_ duration: Duration) -> String {
        "Second-\(timeoutSeconds(duration))"
    }

    /// The seconds `timeoutHeader` asks for.
    static func timeoutSeconds(_ duration: Duration) -> Int64 {
        min(max(duration.components.seconds, timeoutRange.lowerBound), timeoutRange.upperBound)
    }

    /// The seconds a `timeout` value grants ("Second-600"); `.infinite` for "Infinite"; nil
    /// for anything else (a number that is not one, or beyond `maximumGrantedSeconds`).
    enum Granted: Equatable {
        case seconds(Int64)
        case infinite
    }

    static func granted(_ text: String) -> Granted? {
        let value = text.trimmingASCIIWhitespace
        if value.lowercased() == "infinite" { return .infinite }
        guard value.utf8.count > 7, value.prefix(7).lowercased() == "second-" else { return nil }
        let digits = value.dropFirst(7)
        guard digits.utf8.count <= 10, digits.utf8.allSatisfy({ (48...57).contains($0) }), let seconds = Int64(digits),
              seconds <= maximumGrantedSeconds else { return nil }
        return .seconds(seconds)
    }

    /// When a lock granted `granted` from `now` ends; nil for never.
    static func expiry(of granted: Granted, from now: Timestamp) -> Timestamp? {
        switch granted {
        case .infinite: nil
        case .seconds(let seconds): Timestamp(microsecondsSinceEpoch: now.microseconds + seconds * 1_000_000)
        }
    }

    /// The token of a `Lock-Token` header (`<opaquelocktoken:…>`), or nil when it is not one.
    static func token(fromHeader header: String?) -> String? {
        guard let value = header?.trimmingASCIIWhitespace, value.hasPrefix("<"), value.hasSuffix(">") else { return nil }
        return token(String(value.dropFirst().dropLast()))
    }

    /// `text` when it can be a lock token (an absolute URI, RFC 4918 §6.5): 1 to
    /// `maximumTokenBytes` bytes of visible ASCII without `<`, `>`, `(` or `)`, which would
    /// break the `If` header it is sent back in; else nil.
    static func token(_ text: String) -> String? {
        let bytes = text.utf8
        guard (1...maximumTokenBytes).contains(bytes.count), bytes.contains(UInt8(ascii: ":")),
              bytes.allSatisfy({ (0x21...0x7E).contains($0) && !"<>()".utf8.contains($0) }) else { return nil }
        return text
    }

    /// An `If` header (RFC 4918 §10.4) naming lock tokens. One token for `untaggedFor` (the
    /// request's own URL) goes untagged, `(<token>)`, which every server tested matches
    /// whatever the name; otherwise each goes as a tagged list, `<url> (<token>)` (the
    /// grammar allows no mix of the two).
    static func ifHeader(_ tokens: [(url: String, token: String)], untaggedFor requestURL: String?) -> String? {
        guard let first = tokens.first else { return nil }
        if tokens.count == 1, first.url == requestURL { return "(<\(first.token)>)" }
        return tokens.map { "<\($0.url)> (<\($0.token)>)" }.joined(separator: " ")
    }

    /// Text from a server or a user as it may be shown or sent: control characters (C0, DEL,
    /// C1) removed, whitespace around it trimmed, at most `maximumTextBytes` bytes, cut at a
    /// character.
    static func clean(_ text: String) -> String {
        var result = ""
        var bytes = 0
        for scalar in text.unicodeScalars where !(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)) {
            let size = String(scalar).utf8.count
            guard bytes + size <= maximumTextBytes else { break }
            result.unicodeScalars.append(scalar)
            bytes += size
        }
        return result.trimmingCharacters(in: .whitespaces)
    }

    /// The user name in a `Basic` authorization (RFC 7617): the account a lock is taken as.
    /// Empty for other schemes (a bearer token names no one the server shows).
    static func account(fromAuthorization authorization: String?) -> String {
        guard let authorization, authorization.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingASCIIWhitespace),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return "" }
        return clean(String(text[..<colon]))
    }
}
