import Foundation

/// The test kit's one HTTP/1.1 server: 127.0.0.1 and a random port, built on POSIX sockets
/// so tests exercise real TCP (keep-alive, stalls, resets, refused connections). What it
/// answers is the test's: `routes` gets each request with its connection and says whether
/// the connection may serve another.
///
/// One thread accepts; each connection gets its own thread, so kept-alive connections from
/// concurrent clients are served in parallel. Every blocking call polls with a short timeout
/// and checks `isStopping`, so `stop()` ends all threads promptly.
public final class TestServer: @unchecked Sendable {
    // @unchecked: the mutable counters are only touched under `lock`.
    public typealias Routes = @Sendable (TestRequest, TestConnection) -> Bool

    public let port: UInt16
    let routes: Routes
    private let listener: Int32
    private let lock = NSLock()
    private var stopping = false
    private var connections = 0
    private var requests = 0
    private let threads = DispatchGroup()

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public init(routes: @escaping Routes) throws {
        let (descriptor, port) = try Self.listen()
        listener = descriptor
        self.port = port
        self.routes = routes
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop()
            threads.leave()
        }
        thread.name = "TestServer.accept"
        thread.start()
    }

    /// TCP connections accepted so far.
    public var acceptedConnections: Int { lock.withLock { connections } }
    /// Requests parsed so far.
    public var handledRequests: Int { lock.withLock { requests } }
    public var isStopping: Bool { lock.withLock { stopping } }

    func countRequest() { lock.withLock { requests += 1 } }

    /// Stops accepting, ends every connection thread, closes the listener. Returns false if
    /// the threads did not finish within the timeout (a hung handler).
    @discardableResult
    public func stop(timeout: TimeInterval = 10) -> Bool {
        let first = lock.withLock { () -> Bool in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return true }
        let finished = threads.wait(timeout: .now() + timeout) == .success
        close(listener)
        return finished
    }

    private func acceptLoop() {
        while !isStopping {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            lock.withLock { connections += 1 }
            threads.enter()
            let thread = Thread { [self] in
                TestConnection(descriptor: client, server: self).serve()
                threads.leave()
            }
            thread.name = "TestServer.connection"
            thread.start()
        }
    }

    /// Binds 127.0.0.1 port 0 and lets the kernel pick the port.
    private static func listen() throws -> (Int32, UInt16) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(descriptor, 128) == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, UInt16(bigEndian: address.sin_port))
    }

    /// A port on 127.0.0.1 with nothing listening: bound once by us, then released.
    public static func unusedPort() throws -> UInt16 {
        let (descriptor, port) = try listen()
        close(descriptor)
        return port
    }
}
