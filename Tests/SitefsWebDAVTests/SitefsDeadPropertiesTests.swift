import SitefsWebDAV
import Testing

/// The formats of `urn:sitefs:mode` and `urn:sitefs:symlink-target`: what sitefs writes reads
/// back the same, and nothing else reads as a value.
@Suite struct SitefsDeadPropertiesTests {
    @Test func modesAreFourOctalDigitsAndReadBack() {
        #expect(SitefsDeadProperties.text(ofMode: 0o755) == "0755")
        #expect(SitefsDeadProperties.text(ofMode: 0) == "0000")
        #expect(SitefsDeadProperties.text(ofMode: 0o7777) == "7777")
        #expect(SitefsDeadProperties.text(ofMode: 0o10000) == nil)
        for mode in [UInt16(0), 0o644, 0o755, 0o4710, 0o7777] {
            #expect(SitefsDeadProperties.mode(from: SitefsDeadProperties.text(ofMode: mode)!) == mode)
        }
        #expect(SitefsDeadProperties.mode(from: "755") == 0o755)
        #expect(SitefsDeadProperties.mode(from: "7") == 0o7)
    }

    @Test func anythingElseIsNoMode() {
        for text in ["", "0999", "8", "17777", "07777 ", " 0755", "-755", "+755", "0x1ed", "0o755", "rwxr-xr-x", "7 55",
                     "99999999999999999999999", "٧٥٥", "0755\u{0}"] {
            #expect(SitefsDeadProperties.mode(from: text) == nil, "\(text.debugDescription)")
        }
    }

    @Test func targetsArePercentEncodedAndReadBack() {
        let target = Array("../ü ber/%x&<y>".utf8) + [0xFF, 0x01]
        let text = SitefsDeadProperties.text(ofTarget: target)
        #expect(text == "../%C3%BC%20ber/%25x%26%3Cy%3E%FF%01")
        #expect(SitefsDeadProperties.symlinkTarget(from: text!) == target)
        #expect(SitefsDeadProperties.symlinkTarget(from: "/a/%c3%bc") == Array("/a/ü".utf8), "lower-case hex is hex")
        let longest = [UInt8](repeating: 0xFF, count: 4095)
        #expect(SitefsDeadProperties.symlinkTarget(from: SitefsDeadProperties.text(ofTarget: longest)!) == longest)
    }

    @Test func badTargetsAreRefusedBothWays() {
        #expect(SitefsDeadProperties.text(ofTarget: []) == nil)
        #expect(SitefsDeadProperties.text(ofTarget: [0x61, 0x00]) == nil)
        #expect(SitefsDeadProperties.text(ofTarget: [UInt8](repeating: 0x61, count: 4096)) == nil)
        for text in ["", "%", "%4", "%ZZ", "a%00b", "a b", "ü", "a&b", String(repeating: "a", count: 4096),
                     String(repeating: "%41", count: 4096)] {
            #expect(SitefsDeadProperties.symlinkTarget(from: text) == nil, "\(text.prefix(20).debugDescription)")
        }
    }

    @Test func aPropertyUpdateEscapesItsValues() {
        let body = String(decoding: SitefsDeadProperties.propertyUpdate(setting: [(name: "mode", value: "<&>")]), as: UTF8.self)
        #expect(body.contains("<s:mode>&lt;&amp;&gt;</s:mode>"))
        #expect(body.contains(#"xmlns:s="urn:sitefs:""#))
    }

    @Test func listingsCarryTheProperties() throws {
        let body = """
            <?xml version="1.0"?><D:multistatus xmlns:D="DAV:" xmlns:g0="urn:sitefs:"><D:response><D:href>/a.rclonelink</D:href>\
            <D:propstat><D:prop><g0:mode> 0755 </g0:mode><g0:symlink-target>/x%20y</g0:symlink-target></D:prop>\
            <D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response></D:multistatus>
            """
        var found: [DAVResponse] = []
        let parser = MultistatusParser { found.append($0) }
        try parser.feed(Array(body.utf8))
        try parser.finish()
        #expect(found.first?.properties.mode == "0755")
        #expect(found.first?.properties.symlinkTarget == "/x%20y")
    }
}
