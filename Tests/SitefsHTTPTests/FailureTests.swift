import Foundation
import Synchronization
import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Network failures surface fast, with the right category and retry advice.
@Suite struct FailureTests {
    @Test func refusedConnectionIsTransientAndFast() throws {
        let port = try TestServer.unusedPort()
        let client = HTTPClient(baseURL: "http://127.0.0.1:\(port)", timeouts: testTimeouts)
        let (result, seconds) = timed { Result { () throws(HTTPClientError) in try client.send(HTTPRequest(method: .get, path: "/")) } }
        guard case .failure(let error) = result, case .cannotConnect = error else {
            Issue.record("expected cannotConnect, got \(result)")
            return
        }
        #expect(error.isTransient)
        #expect(seconds < 5)
    }

    @Test func unresolvableHostIsTransient() throws {
        // `.invalid` never resolves (RFC 6761). Without a reachable DNS server the lookup may
        // run into the connect timeout instead, which is the other transient outcome.
        let client = HTTPClient(baseURL: "http://sitefs-test-host.invalid", timeouts: testTimeouts)
        #expect {
            try client.send(HTTPRequest(method: .get, path: "/"))
        } throws: { error in
            guard let error = error as? HTTPClientError else { return false }
            switch error {
            case .cannotConnect, .timedOut: return error.isTransient
            default: return false
            }
        }
    }

    @Test func stalledTransferTimesOutAtTheLowSpeedLimit() throws {
        try withTestServer { server in
            let timeouts = HTTPClient.Timeouts(connect: .seconds(5), lowSpeedLimit: 1, lowSpeedTime: .seconds(2), overall: nil)
            let client = HTTPClient(baseURL: server.baseURL, timeouts: timeouts)
            let (result, seconds) = timed {
                Result { () throws(HTTPClientError) in try client.send(HTTPRequest(method: .get, path: "/slow")) }
            }
            guard case .failure(let error) = result, case .timedOut = error else {
                Issue.record("expected timedOut, got \(result)")
                return
            }
            #expect(error.isTransient)
            // A bound that catches a hang, not a speed requirement.
            #expect(seconds >= 1 && seconds < 10)
        }
    }

    /// A caller that gives up ends a stalled transfer at once: libcurl asks the request's
    /// `isCancelled` about once a second even while no byte moves (issue 17, item 1). The
    /// stall timeout is a minute here, so only the cancellation can end it.
    @Test func cancelledTransferEndsWhileStalled() throws {
        try withTestServer { server in
            let timeouts = HTTPClient.Timeouts(connect: .seconds(5), lowSpeedLimit: 1, lowSpeedTime: .seconds(60), overall: nil)
            let client = HTTPClient(baseURL: server.baseURL, timeouts: timeouts)
            let asked = Atomic<Int>(0)
            var request = HTTPRequest(method: .get, path: "/slow", appliesOverallTimeout: false)
            // Gives up on the third question: the transfer has started and stalled by then.
            request.isCancelled = { asked.add(1, ordering: .relaxed).newValue >= 3 }
            let (result, seconds) = timed { Result { () throws(HTTPClientError) in try client.send(request) } }
            guard case .failure(.cancelled) = result else {
                Issue.record("expected cancelled, got \(result)")
                return
            }
            #expect(asked.load(ordering: .relaxed) == 3)
            #expect(!HTTPClientError.cancelled.isTransient)
            // A bound that catches a hang (the stall timeout is 60 s), not a speed requirement.
            #expect(seconds < 30)
        }
    }

    @Test func overallTimeoutFiresWhenApplied() throws {
        try withTestServer { server in
            let timeouts = HTTPClient.Timeouts(connect: .seconds(5), lowSpeedLimit: 1, lowSpeedTime: .seconds(60), overall: .seconds(1))
            let client = HTTPClient(baseURL: server.baseURL, timeouts: timeouts)
            let (result, seconds) = timed {
                Result { () throws(HTTPClientError) in try client.send(HTTPRequest(method: .get, path: "/slow")) }
            }
            guard case .failure(.timedOut) = result else {
                Issue.record("expected timedOut, got \(result)")
                return
            }
            #expect(seconds < 10)
        }
    }

    @Test(arguments: ["/reset", "/truncate"])
    func brokenConnectionMidBodyIsTransient(path: String) throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            #expect {
                try client.send(HTTPRequest(method: .get, path: path), into: .chunks { _ in })
            } throws: { error in
                guard let error = error as? HTTPClientError, case .connectionReset = error else { return false }
                return error.isTransient
            }
            // The next request on the same client gets a fresh connection and succeeds.
            let after = try client.send(HTTPRequest(method: .get, path: "/bytes/10"))
            #expect(after.status == 200)
        }
    }

    @Test func framingHeadersFromTheCallerAreRejected() throws {
        let client = HTTPClient(baseURL: "http://127.0.0.1:1", timeouts: testTimeouts)
        for name in ["Content-Length", "transfer-encoding"] {
            #expect {
                try client.send(HTTPRequest(method: .put, path: "/x", headers: [(name, "5")], body: .bytes([1])))
            } throws: { error in
                guard case .invalidRequest = error as? HTTPClientError else { return false }
                return true
            }
        }
    }

    @Test func invalidPathIsRejectedBeforeSending() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            for path in ["/a b", "/a\r\nX: y", "/é", "/a#b"] {
                #expect {
                    try client.send(HTTPRequest(method: .get, path: path))
                } throws: { error in
                    guard let error = error as? HTTPClientError, case .invalidRequest = error else { return false }
                    return !error.isTransient
                }
            }
            #expect(server.acceptedConnections == 0)
        }
    }

    @Test func headerValuesNeverAppearInErrorsOrDescriptions() throws {
        let secret = "Bearer s3cr3t-token"
        let request = HTTPRequest(method: .get, path: "/x", headers: [("Authorization", secret + "\r\nX-Evil: 1")])
        #expect(!request.description.contains("s3cr3t"))
        #expect(!String(reflecting: request).contains("s3cr3t"))
        var dumped = ""
        dump(request, to: &dumped)
        #expect(!dumped.contains("s3cr3t"))
        #expect(request.description.contains("Authorization"))
        let client = HTTPClient(baseURL: "http://127.0.0.1:1", timeouts: testTimeouts)
        do {
            _ = try client.send(request)
            Issue.record("expected invalidRequest")
        } catch {
            guard case .invalidRequest = error else {
                Issue.record("expected invalidRequest, got \(error)")
                return
            }
            #expect(!error.description.contains("s3cr3t"))
            #expect(error.description.contains("Authorization"))
        }
    }
}
