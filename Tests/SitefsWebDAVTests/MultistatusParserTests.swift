import SitefsWebDAV
import Testing

/// The multistatus parser against bodies as real servers write them, fed whole and in
/// pieces, and against hostile ones.
@Suite struct MultistatusParserTests {
    /// Apache mod_dav's shape: `D:` prefix, `lp1:` for live properties, a 404 propstat for
    /// what it does not have.
    static let apache = """
    <?xml version="1.0" encoding="utf-8"?>
    <D:multistatus xmlns:D="DAV:" xmlns:ns0="DAV:">
    <D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">
    <D:href>/dav/Harbour%20Tower/</D:href>
    <D:propstat>
    <D:prop>
    <lp1:resourcetype><D:collection/></lp1:resourcetype>
    <lp1:getlastmodified>Tue, 24 Nov 2026 09:15:02 GMT</lp1:getlastmodified>
    <lp1:getetag>"1000-5e8f"</lp1:getetag>
    </D:prop>
    <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    <D:propstat>
    <D:prop>
    <ns0:getcontentlength/>
    </D:prop>
    <D:status>HTTP/1.1 404 Not Found</D:status>
    </D:propstat>
    </D:response>
    <D:response xmlns:lp1="DAV:">
    <D:href>/dav/Harbour%20Tower/plan%C3%A9.odt</D:href>
    <D:propstat>
    <D:prop>
    <lp1:resourcetype/>
    <lp1:getcontentlength>204800</lp1:getcontentlength>
    <lp1:getlastmodified>Tue, 24 Nov 2026 09:16:40 GMT</lp1:getlastmodified>
    <lp1:getetag>"32000-5e8f1"</lp1:getetag>
    <D:getcontenttype>application/vnd.oasis.opendocument.text</D:getcontenttype>
    </D:prop>
    <D:status>HTTP/1.1 200 OK</D:status>
    </D:propstat>
    </D:response>
    </D:multistatus>
    """

    /// Nextcloud's shape: `d:` prefix, the owncloud file id, CDATA in a display name.
    static let nextcloud = """
    <?xml version="1.0"?>
    <d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns">
     <d:response>
      <d:href>/remote.php/dav/files/anna/Site%20A/report.xlsx</d:href>
      <d:propstat>
       <d:prop>
        <d:displayname><![CDATA[report.xlsx]]></d:displayname>
        <d:getcontentlength>5120</d:getcontentlength>
        <d:getetag>&quot;6f1c2a&quot;</d:getetag>
        <d:resourcetype/>
        <oc:fileid>4711</oc:fileid>
       </d:prop>
       <d:status>HTTP/1.1 200 OK</d:status>
      </d:propstat>
     </d:response>
    </d:multistatus>
    """

    private func parse(_ body: String, limits: MultistatusParser.Limits = .init(),
                       chunk: Int? = nil) throws(DAVParseError) -> [DAVResponse] {
        var responses: [DAVResponse] = []
        let parser = MultistatusParser(limits: limits) { responses.append($0) }
        let bytes = Array(body.utf8)
        var offset = 0
        let size = chunk ?? max(bytes.count, 1)
        while offset < bytes.count {
            try parser.feed(Array(bytes[offset..<min(offset + size, bytes.count)]))
            offset += size
        }
        try parser.finish()
        return responses
    }

    @Test func apacheResponsesGiveHrefsAndLiveProperties() throws {
        let responses = try parse(Self.apache)
        #expect(responses.map(\.href) == ["/dav/Harbour%20Tower/", "/dav/Harbour%20Tower/plan%C3%A9.odt"])
        #expect(responses[0].properties.isCollection)
        #expect(responses[0].properties.etag == "\"1000-5e8f\"")
        #expect(responses[0].properties.contentLength == nil)
        #expect(responses[0].failedProperties == ["DAV:getcontentlength": 404])
        let file = responses[1].properties
        #expect(!file.isCollection && file.contentLength == "204800" && file.etag == "\"32000-5e8f1\"")
        #expect(file.lastModified == "Tue, 24 Nov 2026 09:16:40 GMT")
        #expect(file.contentType == "application/vnd.oasis.opendocument.text")
    }

    @Test func nextcloudResponsesGiveTheFileIDAndCDATA() throws {
        let responses = try parse(Self.nextcloud)
        #expect(responses.count == 1)
        let properties = responses[0].properties
        #expect(properties.displayName == "report.xlsx" && properties.fileID == "4711" && properties.etag == "\"6f1c2a\"")
    }

    @Test(arguments: [1, 2, 7, 64])
    func aBodyFedInPiecesParsesAsAWholeOne(chunk: Int) throws {
        #expect(try parse(Self.apache, chunk: chunk) == parse(Self.apache))
        #expect(try parse(Self.nextcloud, chunk: chunk) == parse(Self.nextcloud))
    }

    @Test func responsesArriveAsTheirEndTagsDo() throws {
        var seen = 0
        let parser = MultistatusParser { _ in seen += 1 }
        let bytes = Array(Self.apache.utf8)
        let endTag = Array("</D:response>".utf8)
        let start = try #require((0...(bytes.count - endTag.count)).first { Array(bytes[$0..<($0 + endTag.count)]) == endTag })
        let split = start + endTag.count
        try parser.feed(Array(bytes[..<split]))
        try parser.feed(Array("\n".utf8))  // libxml2 reports an end tag once it sees what follows
        #expect(seen == 1)
        try parser.feed(Array(bytes[split...]))
        try parser.finish()
        #expect(seen == 2)
    }

    @Test func aResponseWithItsOwnStatusHasNoProperties() throws {
        let body = """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/locked.odt</d:href>\
        <d:status>HTTP/1.1 423 Locked</d:status></d:response></d:multistatus>
        """
        let responses = try parse(body)
        #expect(responses.count == 1 && responses[0].status == 423 && responses[0].properties == DAVProperties())
    }

    /// A status line is "HTTP/" and a version, then exactly three digits (100...599), then a
    /// space or nothing but whitespace: anything else is no status.
    @Test(arguments: [
        ("HTTP/1.1 423 Locked", 423), ("  HTTP/1.1   404   Not Found \n", 404), ("HTTP/1.1 200", 200), ("HTTP/2 201 Created", 201),
        ("HTTP/1.1 200 \t", 200), ("HTTP/1.1 200\t", 200), ("\nHTTP/1.1 507", 507),
        ("HTTP/1.1 2000 OK", nil), ("HTTP/1.1 20 OK", nil), ("HTTP/1.1\t200 OK", nil), ("HTTP/1.1 200\tOK", nil),
        ("http/1.1 200 OK", nil), ("HTTP/1.1 999 Nine", nil), ("HTTP/1.1 099 Low", nil), ("HTTP/1.1 +20 OK", nil),
        ("HTTP/1.1 -20 OK", nil), ("HTTP/1.1 ２００ OK", nil), ("HTTP/1.1", nil), ("HTTP/1.1 ", nil), ("", nil), ("200", nil),
    ] as [(String, Int?)])
    func statusLinesAreReadStrictly(line: String, code: Int?) throws {
        let body = """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/a</d:href>\
        <d:status>\(line)</d:status></d:response></d:multistatus>
        """
        let responses = try parse(body)
        #expect(responses.count == 1 && responses[0].status == code)
    }

    /// More distinct element names than the parser keeps made into strings once: every one
    /// still reads as itself, in any namespace and with any prefix, and the known properties
    /// after them still count.
    @Test func manyDistinctNamesAllKeepTheirNames() throws {
        let unknown = (0..<100).map { "<x\($0):p\($0) xmlns:x\($0)=\"urn:n\($0 % 7)\"/>" }.joined()
        let body = """
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/a</d:href>\
        <d:propstat><d:prop>\(unknown)<d:getetag>"e"</d:getetag></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>\
        <d:propstat><d:prop><q:getcontentlength xmlns:q="DAV:">\n  42 \t</q:getcontentlength><d:displayname> A b </d:displayname>\
        <o:fileid xmlns:o="http://owncloud.org/ns">7</o:fileid></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>\
        </d:response></d:multistatus>
        """
        for chunk in [nil, 3, 17] as [Int?] {
            let responses = try parse(body, chunk: chunk)
            #expect(responses.count == 1)
            let failed = responses[0].failedProperties
            #expect(failed.count == 101 && failed["DAV:getetag"] == 404)
            #expect((0..<100).allSatisfy { failed["urn:n\($0 % 7)p\($0)"] == 404 })
            let properties = responses[0].properties
            // Values are trimmed, a display name is kept as sent; the failed ETag is not taken.
            #expect(properties.contentLength == "42" && properties.displayName == " A b " && properties.fileID == "7")
            #expect(properties.etag == nil)
        }
    }

    @Test func aDoctypeIsRefusedSoNoEntityExpands() {
        let laughs = """
        <?xml version="1.0"?>
        <!DOCTYPE d:multistatus [
         <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
         <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
         <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
        ]>
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>&c;</d:href></d:response></d:multistatus>
        """
        #expect(throws: DAVParseError.doctype) { try parse(laughs) }
    }

    @Test func anExternalEntityIsNeverLoaded() {
        let body = """
        <?xml version="1.0"?>
        <!DOCTYPE d:multistatus [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
        <d:multistatus xmlns:d="DAV:"><d:response><d:href>&secret;</d:href></d:response></d:multistatus>
        """
        var hrefs: [String] = []
        #expect(throws: DAVParseError.doctype) {
            let parser = MultistatusParser { hrefs.append($0.href) }
            try parser.feed(Array(body.utf8))
            try parser.finish()
        }
        #expect(hrefs.isEmpty)
    }

    @Test func nestingDeeperThanTheLimitIsRefused() {
        let deep = "<d:multistatus xmlns:d=\"DAV:\">" + String(repeating: "<x>", count: 40) + String(repeating: "</x>", count: 40)
            + "</d:multistatus>"
        #expect(throws: DAVParseError.tooDeep) { try parse(deep) }
    }

    @Test func anElementWithEndlessTextIsRefused() {
        let long = "<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>" + String(repeating: "a", count: 70_000)
            + "</d:href></d:response></d:multistatus>"
        #expect(throws: DAVParseError.textTooLong) { try parse(long, chunk: 4096) }
    }

    @Test func moreResponsesThanTheLimitAreRefused() throws {
        let one = "<d:response><d:href>/f</d:href></d:response>"
        let body = "<d:multistatus xmlns:d=\"DAV:\">" + String(repeating: one, count: 4) + "</d:multistatus>"
        #expect(throws: DAVParseError.tooManyResponses) { try parse(body, limits: .init(responses: 3)) }
        #expect(try parse(body, limits: .init(responses: 4)).count == 4)
    }

    @Test func aBodyLargerThanTheLimitIsRefusedWhateverItHolds() {
        // Whitespace between elements: nothing else counts it.
        let padded = "<d:multistatus xmlns:d=\"DAV:\">" + String(repeating: " ", count: 10_000) + "</d:multistatus>"
        #expect(throws: DAVParseError.tooLarge) { try parse(padded, limits: .init(bodyBytes: 4096), chunk: 1024) }
        #expect(throws: Never.self) { try parse(padded, limits: .init(bodyBytes: 20_000), chunk: 1024) }
    }

    @Test func aTruncatedBodyIsMalformed() {
        let cut = String(Self.apache.prefix(Self.apache.count / 2))
        #expect {
            try parse(cut)
        } throws: { error in
            if case .malformed = error as? DAVParseError { return true }
            return false
        }
    }

    @Test func aBodyThatIsNotAMultistatusIsRefused() {
        #expect(throws: DAVParseError.notMultistatus) { try parse("<html><body>Login</body></html>") }
        #expect(throws: DAVParseError.notMultistatus) { try parse("") }
    }

    @Test func aLargeListingStreamsThrough() throws {
        let count = 20_000
        var seen = 0
        var lastHref = ""
        let parser = MultistatusParser { response in
            seen += 1
            lastHref = response.href
        }
        try parser.feed(Array("<d:multistatus xmlns:d=\"DAV:\">".utf8))
        for index in 0..<count {
            try parser.feed(Array("""
            <d:response><d:href>/dav/big/e\(index)</d:href><d:propstat><d:prop><d:getcontentlength>0</d:getcontentlength>\
            </d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
            """.utf8))
        }
        try parser.feed(Array("</d:multistatus>".utf8))
        try parser.finish()
        #expect(seen == count && lastHref == "/dav/big/e\(count - 1)")
    }
}
