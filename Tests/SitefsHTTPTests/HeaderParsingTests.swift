import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Response headers are looked up case-insensitively and describe only the final response.
@Suite struct HeaderParsingTests {
    @Test func lookupIgnoresCaseAndKeepsRepeats() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/headers"))
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.headers["CONTENT-TYPE"] == "application/json")
            #expect(response.headers["x-mixed-case"] == "padded value")
            #expect(response.headers["X-Repeated"] == "first")
            #expect(response.headers.values(for: "x-REPEATED") == ["first", "second"])
            #expect(response.headers["x-empty"] == "")
            #expect(response.headers["x-absent"] == nil)
        }
    }

    @Test func interimResponseHeadersAreDropped() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/continue"))
            #expect(response.status == 201)
            #expect(response.headers["x-final"] == "yes")
            #expect(response.headers["x-interim"] == nil)
            #expect(text(response.body) == "done")
        }
    }

    @Test func parserHandlesFoldingAndStatusLines() {
        var parser = ResponseHeaderParser()
        func feed(_ line: String) {
            Array(line.utf8).withUnsafeBytes { parser.consume(line: $0) }
        }
        feed("HTTP/1.1 100 Continue\r\n")
        feed("X-Old: 1\r\n")
        feed("\r\n")
        feed("HTTP/1.1 204 No Content\r\n")
        feed("X-Long: part one\r\n")
        feed("\t part two\r\n")
        feed("\r\n")
        #expect(parser.status == 204)
        #expect(parser.headers["x-old"] == nil)
        #expect(parser.headers["x-long"] == "part one part two")
        #expect(parser.headers.count == 1)
    }
}
