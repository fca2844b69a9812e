import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Each method reaches the server as sent, with the body and headers intact.
@Suite struct RoundTripTests {
    @Test func getSendsEncodedPathAndHeaders() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL + "/", timeouts: testTimeouts)
            let target = "/echo/" + PercentEncoding.encodeComponent("a b/ü") + "?q=" + PercentEncoding.encodeComponent("x&y")
            let response = try client.send(HTTPRequest(method: .get, path: target, headers: [("X-Custom", "hello")]))
            #expect(response.status == 200)
            #expect(response.isSuccess)
            #expect(response.headers["X-Echo-Method"] == "GET")
            #expect(response.headers["X-Echo-Target"] == "/echo/a%20b%2F%C3%BC?q=x%26y")
            #expect(response.headers["X-Req-x-custom"] == "hello")
            #expect(response.headers["X-Req-content-length"] == nil)
            #expect(response.body.isEmpty)
        }
    }

    @Test(arguments: [HTTPMethod.put, .post, .patch, .delete])
    func bodyRoundTrips(method: HTTPMethod) throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let body = Array("{\"name\":\"report.odt\"}".utf8)
            let request = HTTPRequest(
                method: method, path: "/echo/item", headers: [("Content-Type", "application/json")], body: .bytes(body)
            )
            let response = try client.send(request)
            #expect(response.status == 200)
            #expect(response.headers["x-echo-method"] == method.rawValue)
            #expect(response.body == body)
            #expect(response.bodyLength == Int64(body.count))
            #expect(response.headers["x-req-content-length"] == "\(body.count)")
            #expect(response.headers["x-req-content-type"] == "application/json")
            // No 100-continue wait, and a known length rather than chunked encoding.
            #expect(response.headers["x-req-expect"] == nil)
            #expect(response.headers["x-req-transfer-encoding"] == nil)
        }
    }

    @Test(arguments: [HTTPMethod.put, .post, .patch])
    func bodylessWritesSendZeroLength(method: HTTPMethod) throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: method, path: "/echo"))
            #expect(response.headers["x-echo-method"] == method.rawValue)
            #expect(response.headers["x-req-content-length"] == "0")
            // libcurl's default form content type must not be invented for a POST.
            #expect(response.headers["x-req-content-type"] == nil)
        }
    }

    @Test func deleteWithoutBodyHasNoLength() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .delete, path: "/echo/x"))
            #expect(response.headers["x-echo-method"] == "DELETE")
            #expect(response.headers["x-req-content-length"] == nil)
        }
    }

    @Test func headReturnsHeadersOnly() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .head, path: "/bytes/1234"))
            #expect(response.status == 200)
            #expect(response.headers["content-length"] == "1234")
            #expect(response.body.isEmpty)
        }
    }

    @Test func errorStatusIsAResponseNotAnError() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/status/409"))
            #expect(response.status == 409)
            #expect(!response.isSuccess)
            #expect(text(response.body) == "{\"error\":\"status 409\"}")
        }
    }

    @Test func emptyHeaderValueIsSent() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let response = try client.send(HTTPRequest(method: .get, path: "/echo", headers: [("X-Blank", "")]))
            #expect(response.headers["x-req-x-blank"] == "")
        }
    }
}
