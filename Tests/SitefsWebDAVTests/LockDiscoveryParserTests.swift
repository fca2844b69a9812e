import Foundation
import SitefsWebDAV
import Testing

/// `DAV:lockdiscovery` as the three servers tested write it (bodies captured from Apache 2.4,
/// WsgiDAV 4.4 and nginx dav-ext 3.0), whole and a byte at a time, and LOCK answers.
@Suite struct LockDiscoveryParserTests {
    /// Apache keeps the owner as it came, with namespace declarations of its own, and shows
    /// the token to everyone; no lockroot.
    static let apache = """
    <?xml version="1.0" encoding="utf-8"?>
    <D:multistatus xmlns:D="DAV:" xmlns:ns0="DAV:">
    <D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">
    <D:href>/dav/a.txt</D:href>
    <D:propstat>
    <D:prop>
    <lp1:getetag>"6-6614eb60e9dfd"</lp1:getetag>
    <D:lockdiscovery><D:activelock>
    <D:locktype><D:write/></D:locktype>
    <D:lockscope><D:exclusive/></D:lockscope>
    <D:depth>0</D:depth>
    <ns0:owner xmlns:ns1="urn:sitefs:lock" xmlns:ns0="DAV:">Anna Berger<ns1:account>anna</ns1:account><ns1:name>Anna Berger</ns1:name>\
    <ns1:device>laptop-3</ns1:device><ns1:application>LibreOffice</ns1:application><ns1:since>2026-11-28T04:00:00.000000Z</ns1:since></ns0:owner>\
    <D:timeout>Second-120</D:timeout>
    <D:locktoken>
    <D:href>opaquelocktoken:065c73dc-d25c-497c-88a5-6e0f8c42c0aa</D:href>
    </D:locktoken>
    </D:activelock>
    </D:lockdiscovery>
    </D:prop>
    <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    </D:response>
    <D:response xmlns:lp1="DAV:">
    <D:href>/dav/b.txt</D:href>
    <D:propstat>
    <D:prop>
    <D:lockdiscovery/>
    </D:prop>
    <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    </D:response>
    </D:multistatus>
    """

    /// WsgiDAV: `ns0:` prefixes, the owner's namespace declared on the root.
    static let wsgidav = """
    <?xml version="1.0" encoding="utf-8" ?>
    <ns0:multistatus xmlns:ns0="DAV:" xmlns:ns1="urn:sitefs:lock"><ns0:response><ns0:href>/a.txt</ns0:href><ns0:propstat><ns0:prop>\
    <ns0:getetag>16483332-1795840550-6</ns0:getetag><ns0:lockdiscovery><ns0:activelock><ns0:locktype><ns0:write /></ns0:locktype>\
    <ns0:lockscope><ns0:exclusive /></ns0:lockscope><ns0:depth>0</ns0:depth><ns0:owner><ns0:href>mailto:ben@example.com</ns0:href>\
    </ns0:owner><ns0:timeout>Second-119</ns0:timeout><ns0:locktoken><ns0:href>opaquelocktoken:0xe7b5c6</ns0:href></ns0:locktoken>\
    <ns0:lockroot><ns0:href>/a.txt</ns0:href></ns0:lockroot></ns0:activelock></ns0:lockdiscovery></ns0:prop>\
    <ns0:status>HTTP/1.1 200 OK</ns0:status></ns0:propstat></ns0:response></ns0:multistatus>
    """

    /// nginx dav-ext: no owner at all.
    static let nginx = """
    <?xml version="1.0" encoding="utf-8" ?>
    <D:multistatus xmlns:D="DAV:">
    <D:response>
    <D:href>/dav/a.txt</D:href>
    <D:propstat>
    <D:prop>
    <D:lockdiscovery>
    <D:activelock>
    <D:locktype><D:write/></D:locktype>
    <D:lockscope><D:exclusive/></D:lockscope>
    <D:depth>0</D:depth>
    <D:timeout>Second-600</D:timeout>
    <D:locktoken><D:href>urn:6f37174e</D:href></D:locktoken>
    <D:lockroot><D:href>/dav/a.txt</D:href></D:lockroot>
    </D:activelock>
    </D:lockdiscovery>
    </D:prop>
    <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    </D:response>
    </D:multistatus>
    """

    private func parse(_ body: String, chunk: Int? = nil) throws(DAVParseError) -> [DAVResponse] {
        var responses: [DAVResponse] = []
        let parser = MultistatusParser { responses.append($0) }
        let bytes = Array(body.utf8)
        var offset = 0
        let size = chunk ?? bytes.count
        while offset < bytes.count {
            try parser.feed(Array(bytes[offset..<min(offset + size, bytes.count)]))
            offset += size
        }
        try parser.finish()
        return responses
    }

    @Test(arguments: [nil, 1, 7])
    func apacheLocksCarryTheOwnersTextAndSitefsFields(chunk: Int?) throws {
        let responses = try parse(Self.apache, chunk: chunk)
        #expect(responses.count == 2 && responses[1].properties.locks.isEmpty)
        let lock = try #require(responses[0].properties.locks.first)
        #expect(responses[0].properties.locks.count == 1 && responses[0].properties.etag == "\"6-6614eb60e9dfd\"")
        #expect(lock.token == "opaquelocktoken:065c73dc-d25c-497c-88a5-6e0f8c42c0aa")
        #expect(lock.timeout == "Second-120" && lock.depth == "0" && lock.root == nil)
        #expect(lock.hasOwner && lock.ownerText == "Anna Berger" && lock.ownerHref == nil)
        #expect(lock.sitefsFields == ["account": "anna", "name": "Anna Berger", "device": "laptop-3", "application": "LibreOffice",
                                      "since": "2026-11-28T04:00:00.000000Z"])
    }

    @Test func wsgidavLocksCarryAnOwnerHref() throws {
        let lock = try #require(try parse(Self.wsgidav).first?.properties.locks.first)
        #expect(lock.ownerHref == "mailto:ben@example.com" && lock.ownerText.isEmpty && lock.sitefsFields.isEmpty)
        #expect(lock.token == "opaquelocktoken:0xe7b5c6" && lock.timeout == "Second-119" && lock.root == "/a.txt")
    }

    @Test func nginxLocksHaveNoOwner() throws {
        let lock = try #require(try parse(Self.nginx, chunk: 3).first?.properties.locks.first)
        #expect(!lock.hasOwner && lock.ownerText.isEmpty && lock.token == "urn:6f37174e" && lock.timeout == "Second-600")
    }

    @Test func locksInAFailedPropstatDoNotCount() throws {
        let body = Self.nginx.replacingOccurrences(of: "HTTP/1.1 200 OK", with: "HTTP/1.1 403 Forbidden")
        let response = try #require(try parse(body).first)
        #expect(response.properties.locks.isEmpty && response.failedProperties["DAV:lockdiscovery"] == 403)
    }

    @Test func manyLocksAndOwnerFieldsAreCutToTheirLimits() throws {
        let fields = (0..<20).map { "<s:f\($0)>v</s:f\($0)>" }.joined()
        let long = String(repeating: "é", count: 2000)
        let lock = "<D:activelock><D:owner xmlns:s=\"urn:sitefs:lock\">\(long)\(fields)</D:owner><D:timeout>Infinite</D:timeout></D:activelock>"
        let body = """
            <D:multistatus xmlns:D="DAV:"><D:response><D:href>/a</D:href><D:propstat><D:prop><D:lockdiscovery>\
            \(String(repeating: lock, count: 20))</D:lockdiscovery></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>\
            </D:response></D:multistatus>
            """
        let locks = try #require(try parse(body).first).properties.locks
        #expect(locks.count == 8)
        #expect(locks[0].sitefsFields.count == 8 && locks[0].timeout == "Infinite")
        // Cut at a character: 1,024 bytes hold 512 two-byte "é".
        #expect(locks[0].ownerText == String(repeating: "é", count: 512))
    }

    /// The id of the LOCK request that made a lock, from sitefs's `request` element: kept
    /// only when it is one (base64url, 16 to 64 characters), the first of several; never among
    /// the holder's fields.
    @Test func aRequestIDIsReadOnlyWhenItIsOne() throws {
        let id = "q2bF_0-9zZaA19xYwvUtsQ"
        let requests = [
            ("<s:request>\(id)</s:request>", id),
            ("<s:request> \(id)\n</s:request>", id),
            ("<s:request>\(id)</s:request><s:request>\(String(repeating: "B", count: 22))</s:request>", id),
            ("<s:request>short</s:request>", nil),
            ("<s:request>\(String(repeating: "A", count: 65))</s:request>", nil),
            ("<s:request>q2bF+0/9zZaA19xYwvUtsQ==</s:request>", nil),
            ("<s:request>q2bF 0-9zZaA19xYwvUtsQ</s:request>", nil),
            ("<D:request>\(id)</D:request>", nil),
            ("<s:name>Anna</s:name>", nil),
        ]
        for (fields, expected) in requests {
            let body = """
                <D:multistatus xmlns:D="DAV:"><D:response><D:href>/a</D:href><D:propstat><D:prop><D:lockdiscovery>\
                <D:activelock><D:owner xmlns:s="urn:sitefs:lock">Anna\(fields)</D:owner><D:timeout>Second-60</D:timeout>\
                </D:activelock></D:lockdiscovery></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
                """
            let lock = try #require(try parse(body, chunk: 5).first?.properties.locks.first)
            #expect(lock.requestID == expected, "\(fields)")
            #expect(lock.sitefsFields["request"] == nil && lock.ownerText == "Anna")
        }
    }

    @Test func aLockAnswerGivesTheLockJustTaken() throws {
        let answer = """
            <?xml version="1.0" encoding="utf-8"?>
            <D:prop xmlns:D="DAV:">
            <D:lockdiscovery>
            <D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:exclusive/></D:lockscope><D:depth>0</D:depth>
            <D:timeout>Second-600</D:timeout><D:locktoken><D:href>urn:5728172f</D:href></D:locktoken></D:activelock>
            </D:lockdiscovery>
            </D:prop>
            """
        let locks = try LockAnswer.activeLocks(in: Array(answer.utf8))
        #expect(locks.map(\.token) == ["urn:5728172f"] && locks.first?.timeout == "Second-600")
        #expect(try LockAnswer.activeLocks(in: Array("\r\n".utf8)).isEmpty)
        #expect(throws: DAVParseError.notMultistatus) { try LockAnswer.activeLocks(in: Array(Self.nginx.utf8)) }
        #expect(throws: DAVParseError.doctype) {
            try LockAnswer.activeLocks(in: Array("<!DOCTYPE x [<!ENTITY a \"b\">]><D:prop xmlns:D=\"DAV:\"/>".utf8))
        }
    }
}
