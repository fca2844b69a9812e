import Foundation
import SitefsTestSupport
import Testing
@testable import SitefsHTTP

/// Handles are shared safely across threads and keep their connections alive.
@Suite struct ConnectionPoolTests {
    @Test func sequentialRequestsReuseOneConnection() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            for index in 0..<20 {
                let method: HTTPMethod = index.isMultiple(of: 2) ? .get : .put
                let body: HTTPRequest.Body = method == .put ? .bytes(Array("n\(index)".utf8)) : .none
                let response = try client.send(HTTPRequest(method: method, path: "/echo/\(index)", body: body))
                #expect(response.status == 200)
            }
            #expect(server.handledRequests == 20)
            #expect(server.acceptedConnections == 1)
            #expect(client.idleHandleCount == 1)
        }
    }

    @Test func silentlyClosedConnectionsAreReplaced() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            for index in 0..<5 {
                let body = Array("upload \(index)".utf8)
                let response = try client.send(HTTPRequest(method: .put, path: "/echo-then-drop", body: .bytes(body)))
                #expect(response.body == body)
            }
            #expect(server.handledRequests == 5)
            #expect(server.acceptedConnections == 5)
        }
    }

    @Test func uploadIsResentWhenAReusedConnectionDies() throws {
        let path = temporaryPath("resend")
        defer { removeTemporary(path) }
        try writePatternFile(path, length: 200_000)
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts)
            let first = try client.send(HTTPRequest(method: .put, path: "/echo-first-only", body: .bytes([1, 2, 3])))
            #expect(first.body == [1, 2, 3])
            // Sent on the kept-alive connection, dropped unanswered, then rewound (seek
            // callback) and sent again on a fresh connection by libcurl.
            let second = try client.send(HTTPRequest(method: .put, path: "/echo-first-only", body: .file(path: path)))
            #expect(second.status == 200)
            #expect(second.body == TestPattern.bytes(at: 0, count: 200_000))
            #expect(server.acceptedConnections == 2)
            #expect(server.handledRequests == 3)
        }
    }

    @Test func eightThreadsShareThePool() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts, maxIdleHandles: 8)
            let threads = 8, perThread = 10
            let failures = Failures()
            let finished = runOnThreads(threads, timeout: 60) { thread in
                for index in 0..<perThread {
                    let body = Array("thread \(thread) request \(index)".utf8)
                    do {
                        let response = try client.send(HTTPRequest(method: .post, path: "/echo", body: .bytes(body)))
                        if response.body != body { failures.add("thread \(thread) #\(index): wrong body") }
                    } catch {
                        failures.add("thread \(thread) #\(index): \(error)")
                    }
                }
            }
            #expect(finished, "worker threads did not finish")
            #expect(failures.all.isEmpty, "\(failures.all)")
            #expect(server.handledRequests == threads * perThread)
            #expect(server.acceptedConnections <= threads)
            #expect(server.acceptedConnections < threads * perThread)
            #expect(client.idleHandleCount <= 8)
        }
    }

    @Test func burstBeyondPoolCapacityCreatesAndDiscardsHandles() throws {
        try withTestServer { server in
            let client = HTTPClient(baseURL: server.baseURL, timeouts: testTimeouts, maxIdleHandles: 2)
            let failures = Failures()
            let finished = runOnThreads(8, timeout: 60) { thread in
                for _ in 0..<5 {
                    do {
                        let response = try client.send(HTTPRequest(method: .get, path: "/bytes/20000"))
                        if response.body.count != 20000 { failures.add("thread \(thread): short body") }
                    } catch {
                        failures.add("thread \(thread): \(error)")
                    }
                }
            }
            #expect(finished, "worker threads did not finish")
            #expect(failures.all.isEmpty, "\(failures.all)")
            #expect(server.handledRequests == 40)
            #expect(client.idleHandleCount <= 2)
        }
    }
}

/// Failure messages collected from worker threads.
final class Failures: @unchecked Sendable {
    // @unchecked: `messages` is only touched under `lock`.
    private let lock = NSLock()
    private var messages: [String] = []

    func add(_ message: String) { lock.withLock { messages.append(message) } }
    var all: [String] { lock.withLock { messages } }
}
