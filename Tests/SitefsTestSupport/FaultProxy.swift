import Foundation

/// A TCP proxy on 127.0.0.1 in front of an HTTP/1.1 server that injects network faults:
/// refused and silent connections, slow links, resets mid-transfer and canned error
/// responses. It sits between the mount daemon (libcurl, kept-alive connections) and the
/// reference server, so tests can watch the client cope with a bad network without changing
/// either program.
///
/// Threads and blocking POSIX sockets, not async: one thread accepts, and every connection
/// has one thread per direction, which keeps the byte shuffling easy to follow. Nothing
/// blocks for good: `stop()` shuts down (shutdown(2)) every socket, which wakes each blocked
/// call, and then waits for the threads with a deadline.
///
/// Faults are decided per HTTP request. The client-to-server direction is parsed just far
/// enough (request line, headers, then a Content-Length or chunked body) to see where each
/// request starts, so a fault can hit "the next request" even on a kept-alive connection.
/// Responses are not parsed: faults assume one request in flight per connection at a time,
/// which is how libcurl uses HTTP/1.1.
public final class FaultProxy: @unchecked Sendable {
    // @unchecked: all shared state lives in `Core`, behind its lock.

    /// What the proxy does with connections and requests.
    public enum Mode: Sendable {
        /// Forward both ways, untouched.
        case pass
        /// Accept, then close at once with a TCP reset: the client sees "connection reset" or
        /// an empty reply, immediately. On a kept-alive connection, its next request is reset.
        case refuse
        /// Accept and never answer (the request is read and dropped), so client timeouts fire.
        /// On a kept-alive connection, its next request gets no answer.
        case blackhole
        /// Forward, but wait this long before each chunk of the request and of its response.
        case delay(Duration)
        /// Forward the request, then only this many bytes of its response (head included),
        /// then reset the connection (SO_LINGER 0): the client gets ECONNRESET mid-transfer.
        case resetAfter(bytes: Int)
        /// Read the request (and its body) but never send it upstream; answer this response
        /// with `Connection: close`, then close. For 500, 503, 429 with Retry-After and so on.
        case respond(status: Int, headers: [(String, String)], body: String)
    }

    public struct SocketError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The proxy's own port on 127.0.0.1, picked by the kernel.
    public let port: Int
    /// Base URL for clients: "http://127.0.0.1:PORT".
    public var url: String { "http://127.0.0.1:\(port)" }

    private let core: Core

    /// Starts listening and accepting; `upstreamPort` is the real server on 127.0.0.1.
    public init(upstreamPort: Int) throws {
        guard (1...65535).contains(upstreamPort) else {
            throw SocketError(description: "upstream port \(upstreamPort) is not a TCP port")
        }
        let (listener, port) = try ProxySocket.listen()
        self.port = port
        core = Core(listener: listener, upstreamPort: upstreamPort)
        core.start()
    }

    deinit { core.stop(timeout: .seconds(5)) }

    /// The base mode. A change applies to connections accepted afterwards and to the next
    /// request of connections that are already open. `.refuse` and `.blackhole` also take
    /// the requests in flight, as a server that went away or a network that went silent
    /// would: open connections are reset, or from then on get no byte more. (A request the
    /// server holds on purpose, a change-feed long-poll, would otherwise go on as if
    /// nothing had happened.)
    public var mode: Mode {
        get { core.withLock { core.baseMode } }
        set {
            let open = core.withLock { () -> [Connection] in
                core.baseMode = newValue
                return core.openConnections
            }
            switch newValue {
            case .refuse: for connection in open { connection.resetNow() }
            case .blackhole: for connection in open { connection.silence() }
            default: break
            }
        }
    }

    /// The server new upstream connections go to (127.0.0.1): switching it is a load balancer
    /// sending the client to another instance once one has died.
    public var upstreamPort: Int {
        get { core.withLock { core.upstreamPort } }
        set { core.withLock { core.upstreamPort = newValue } }
    }

    /// Applies `mode` to the next `times` fault decisions, then returns to the base mode.
    /// A decision is made for every request, and also on accept when the mode due is
    /// `.refuse` or `.blackhole` (they act before any request), whichever comes first.
    /// Calls queue up in order, so `injectOnce(.pass, times: 1)` followed by a fault lets one
    /// request through first. Faults that end a connection close it, so the client's next
    /// request comes on a new connection.
    public func injectOnce(_ mode: Mode, times: Int = 1) {
        guard times > 0 else { return }
        core.withLock { core.injections.append((mode, times)) }
    }

    /// Holds back the responses to every request whose target starts with `prefix` for
    /// `delay` (before each chunk), while the request itself goes to the server at once: the
    /// server decides its answer, and the client learns it `delay` later. Nil lifts it. Applies
    /// where no injected fault does.
    public func delayResponses(toTargetsStartingWith prefix: String, by delay: Duration?) {
        core.withLock { core.responseDelays[prefix] = delay }
    }

    /// Injected faults not used yet (summed `times`).
    public var pendingInjections: Int { core.withLock { core.injections.reduce(0) { $0 + $1.remaining } } }
    /// TCP connections accepted from clients.
    public var connectionsAccepted: Int { core.withLock { core.connectionsAccepted } }
    /// Request heads read from clients (connections refused or blackholed on accept have none).
    public var requestsSeen: Int { core.withLock { core.requestsSeen } }
    /// Connections and requests that got anything other than `.pass`.
    public var faultsInjected: Int { core.withLock { core.faultsInjected } }

    /// Closes the listener and every connection, and waits up to `timeout` for all threads.
    /// Returns false if some thread did not finish in time. Safe to call more than once.
    @discardableResult
    public func stop(timeout: Duration = .seconds(5)) -> Bool {
        core.stop(timeout: timeout)
    }
}

// The machinery, nested so that its names cannot clash with the rest of the module.
extension FaultProxy {
    // MARK: - Shared state and the accept thread

    /// Everything the threads share. Separate from `FaultProxy` so that threads do not keep the
    /// proxy alive: dropping the last reference runs `deinit`, which stops everything.
    fileprivate final class Core: @unchecked Sendable {
        // @unchecked: the mutable state below is only touched under `lock`.
        let listener: Int32
        /// Under `lock`.
        var upstreamPort: Int
        private let lock = NSLock()
        private let threads = DispatchGroup()

        var baseMode = FaultProxy.Mode.pass
        var injections: [(mode: FaultProxy.Mode, remaining: Int)] = []
        /// `delayResponses`: response delays by request-target prefix.
        var responseDelays: [String: Duration] = [:]
        var connectionsAccepted = 0
        var requestsSeen = 0
        var faultsInjected = 0
        private var stopping = false
        private var listenerClosed = false
        private var connections: [ObjectIdentifier: Connection] = [:]

        init(listener: Int32, upstreamPort: Int) {
            self.listener = listener
            self.upstreamPort = upstreamPort
        }

        func withLock<T>(_ body: () throws -> T) rethrows -> T {
            lock.lock()
            defer { lock.unlock() }
            return try body()
        }

        var isStopping: Bool { withLock { stopping } }

        func start() {
            spawn("FaultProxy.accept") { [self] in acceptLoop() }
        }

        /// Runs `body` on a new thread that `stop()` waits for; false once stopping.
        @discardableResult
        func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
            let started = withLock { () -> Bool in
                guard !stopping else { return false }
                threads.enter()
                return true
            }
            guard started else { return false }
            let thread = Thread { [threads] in
                body()
                threads.leave()
            }
            thread.name = name
            thread.start()
            return true
        }

        @discardableResult
        func stop(timeout: Duration) -> Bool {
            let open = withLock { () -> [Connection] in
                guard !stopping else { return [] }
                stopping = true
                // Wakes accept(2) on Linux; the accept loop also polls with a timeout.
                shutdown(listener, Int32(SHUT_RDWR))
                return Array(connections.values)
            }
            for connection in open { connection.shutDownAll() }
            let finished = threads.wait(timeout: .now() + .microseconds(Int(ProxySocket.microseconds(timeout)))) == .success
            withLock {
                // Only once the accept thread is gone, so the number cannot be reused under it.
                if finished && !listenerClosed {
                    close(listener)
                    listenerClosed = true
                }
            }
            return finished
        }

        private func acceptLoop() {
            while !isStopping {
                var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 200) > 0 else { continue }
                let client = accept(listener, nil, nil)
                guard client >= 0 else { continue }
                accepted(client)
            }
        }

        private func accepted(_ client: Int32) {
            ProxySocket.setNoDelay(client)
            let fault = withLock { () -> FaultProxy.Mode? in
                guard !stopping else { return .refuse }
                connectionsAccepted += 1
                return takeConnectionFault()
            }
            switch fault {
            case .refuse?:
                ProxySocket.closeWithReset(client)
            case .blackhole?:
                start(Connection(core: self, client: client, blackholed: true))
            default:
                start(Connection(core: self, client: client, blackholed: false))
            }
        }

        private func start(_ connection: Connection) {
            let registered = withLock { () -> Bool in
                guard !stopping else { return false }
                connections[ObjectIdentifier(connection)] = connection
                return true
            }
            guard registered, spawn("FaultProxy.request", { connection.runRequestPump() }) else {
                connection.closeUnstarted()
                forget(connection)
                return
            }
        }

        /// Called under `lock`.
        var openConnections: [Connection] { Array(connections.values) }

        func forget(_ connection: Connection) {
            _ = withLock { connections.removeValue(forKey: ObjectIdentifier(connection)) }
        }

        // Called under `lock`.

        /// The mode for the next fault decision: the oldest injection, else the base mode.
        private func nextMode(consume: Bool) -> FaultProxy.Mode {
            guard let first = injections.first else { return baseMode }
            if consume {
                injections[0].remaining -= 1
                if injections[0].remaining == 0 { injections.removeFirst() }
            }
            return first.mode
        }

        /// `.refuse` or `.blackhole` if the next decision is one: those act on accept, before
        /// any request arrives. Anything else waits for the first request.
        private func takeConnectionFault() -> FaultProxy.Mode? {
            switch nextMode(consume: false) {
            case .refuse, .blackhole:
                faultsInjected += 1
                return nextMode(consume: true)
            default:
                return nil
            }
        }

        /// Counts one request and decides its fate, and how long its response is held back.
        func takeRequestFault(target: String) -> (FaultProxy.Mode, responseDelay: Duration) {
            withLock {
                requestsSeen += 1
                let mode = nextMode(consume: true)
                if case .pass = mode {} else { faultsInjected += 1 }
                let delay = responseDelays.first { target.hasPrefix($0.key) }?.value ?? .zero
                return (mode, delay)
            }
        }
    }

    // MARK: - One proxied connection

    /// A client connection and, once the first request is forwarded, its upstream connection.
    /// The request pump (client to server) owns the parsing and the fault decisions; the
    /// response pump (server to client) applies the current request's delay and reset budget.
    /// Whichever pump finishes last closes both sockets, so no thread ever uses a closed
    /// (and possibly reused) descriptor.
    fileprivate final class Connection: @unchecked Sendable {
        // @unchecked: the mutable state below is only touched under `lock`, except `framer`
        // and `disposition`, which only the request pump uses, and `upstream`, which is set
        // once (under `lock`) before the response pump starts and never changes after.
        let core: Core
        let client: Int32
        private let lock = NSLock()
        private var upstream: Int32 = -1
        private var pumps = 1
        private var closed = false
        /// Set by `stop()` and by resets: pumps must not touch the client any more, and
        /// delays end early.
        private var ending = false
        /// The network went silent (`.blackhole` set while open): nothing more is passed on
        /// either way, though both sides stay connected.
        private var silenced = false
        /// For the response currently flowing: delay per chunk, and bytes left before a reset.
        private var responseDelay = Duration.zero
        private var resetBudget: Int?

        /// What happens to the bytes of the request currently being read.
        private enum Disposition {
            case forward(delay: Duration)
            case respond(status: Int, headers: [(String, String)], body: String, isHead: Bool)
            case swallow
        }

        private var framer = RequestFramer()
        private var disposition: Disposition

        init(core: Core, client: Int32, blackholed: Bool) {
            self.core = core
            self.client = client
            disposition = blackholed ? .swallow : .forward(delay: .zero)
        }

        private var isEnding: Bool { lock.withLock { ending } }
        private var isSilenced: Bool { lock.withLock { silenced } }

        /// Resets the connection from outside its pumps (the proxy's mode became `.refuse`).
        func resetNow() { reset() }

        /// Passes nothing more either way (the proxy's mode became `.blackhole`).
        func silence() { lock.withLock { silenced = true } }

        // MARK: Client to server

        func runRequestPump() {
            defer { finish() }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = ProxySocket.receive(client, into: &chunk)
                guard count > 0 else { break }
                if case .swallow = disposition { continue }
                if isSilenced { continue }
                for event in framer.feed(chunk[0..<count]) {
                    guard handle(event) else { return }
                }
            }
            // The client is done sending (or the connection is ending): pass the half-close on,
            // so the server can finish its response; the response pump forwards the rest.
            lock.withLock {
                if upstream >= 0 && !closed { shutdown(upstream, Int32(SHUT_WR)) }
            }
        }

        /// Acts on one parsed piece of the request stream; false when the connection is over.
        private func handle(_ event: RequestFramer.Event) -> Bool {
            // A blackholed request takes the rest of the connection with it.
            if case .swallow = disposition { return true }
            switch event {
            case .head(let head):
                return begin(head)
            case .body(let bytes), .unframed(let bytes):
                switch disposition {
                case .forward(let delay): return forward(bytes, after: delay)
                case .respond, .swallow: return true  // never reaches the server
                }
            case .end:
                guard case .respond(let status, let headers, let body, let isHead) = disposition else { return true }
                respond(status: status, headers: headers, body: body, isHead: isHead)
                return false
            }
        }

        /// A new request head: decide its fault and start acting on it.
        private func begin(_ head: RequestFramer.Head) -> Bool {
            let (mode, heldBack) = core.takeRequestFault(target: head.target)
            switch mode {
            case .pass, .delay, .resetAfter:
                var delay = Duration.zero
                var budget: Int?
                if case .delay(let value) = mode { delay = value }
                if case .resetAfter(let bytes) = mode { budget = max(0, bytes) }
                lock.withLock {
                    responseDelay = max(delay, heldBack)
                    resetBudget = budget
                }
                disposition = .forward(delay: delay)
                return forward(head.bytes, after: delay)
            case .respond(let status, let headers, let body):
                disposition = .respond(status: status, headers: headers, body: body, isHead: head.method == "HEAD")
                // A client waiting for "100 Continue" sends no body until answered: answer now.
                guard head.expectsContinue else { return true }
                respond(status: status, headers: headers, body: body, isHead: head.method == "HEAD")
                return false
            case .refuse:
                reset()
                return false
            case .blackhole:
                disposition = .swallow
                return true
            }
        }

        /// Sends request bytes upstream, connecting first if needed. A failure resets the
        /// client, as a dying server would.
        private func forward(_ bytes: [UInt8], after delay: Duration) -> Bool {
            guard connectUpstream() else {
                reset()
                return false
            }
            pause(delay)
            guard !isEnding, ProxySocket.sendAll(upstream, bytes) else {
                reset()
                return false
            }
            return true
        }

        /// Connects lazily, on the first forwarded request, so `.respond` never touches the server.
        private func connectUpstream() -> Bool {
            if lock.withLock({ upstream >= 0 }) { return true }
            guard let descriptor = ProxySocket.connect(port: core.withLock { core.upstreamPort }) else { return false }
            let accepted = lock.withLock { () -> Bool in
                guard !ending else { return false }
                upstream = descriptor
                pumps += 1
                return true
            }
            guard accepted else {
                close(descriptor)
                return false
            }
            guard core.spawn("FaultProxy.response", { [self] in runResponsePump() }) else {
                lock.withLock { pumps -= 1 }
                return false
            }
            return true
        }

        /// Answers the canned response, then closes gracefully: our side first, then waiting
        /// (briefly) for the client to close, so unread request bytes do not turn the close
        /// into a reset that could destroy the response in the client's buffers.
        private func respond(status: Int, headers: [(String, String)], body: String, isHead: Bool) {
            var text = "HTTP/1.1 \(status) \(ProxySocket.reason(for: status))\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            if !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
                text += "Content-Length: \(body.utf8.count)\r\n"
            }
            text += "Connection: close\r\n\r\n"
            if !isHead { text += body }
            _ = ProxySocket.sendAll(client, Array(text.utf8))
            lock.withLock {
                guard !closed else { return }
                shutdown(client, Int32(SHUT_WR))
                if upstream >= 0 { shutdown(upstream, Int32(SHUT_RDWR)) }
            }
            ProxySocket.drain(client, for: .seconds(2)) { [self] in isEnding || core.isStopping }
        }

        /// Ends the connection with a TCP reset. shutdown(SHUT_RD) wakes our own reader without
        /// sending a FIN; the reset goes out when the last pump closes the socket.
        private func reset() {
            lock.withLock {
                ending = true
                guard !closed else { return }
                ProxySocket.setLingerZero(client)
                shutdown(client, Int32(SHUT_RD))
                if upstream >= 0 { shutdown(upstream, Int32(SHUT_RDWR)) }
            }
        }

        // MARK: Server to client

        private func runResponsePump() {
            defer { finish() }
            var chunk = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = ProxySocket.receive(upstream, into: &chunk)
                if count < 0 && !isEnding {
                    reset()  // the server reset us: pass it on
                    return
                }
                guard count > 0 else { break }
                if isSilenced { continue }
                let (delay, budget) = lock.withLock { (responseDelay, resetBudget) }
                pause(delay)
                let allowed = min(count, budget ?? count)
                guard !isEnding, ProxySocket.sendAll(client, Array(chunk[0..<allowed])) else {
                    reset()
                    return
                }
                if let budget {
                    lock.withLock { resetBudget = budget - allowed }
                    if budget - allowed == 0 {
                        reset()
                        return
                    }
                }
            }
            // The server closed: close our sending side too, unless the connection is being
            // torn down (then a FIN must not precede the reset).
            lock.withLock {
                if !ending && !closed { shutdown(client, Int32(SHUT_WR)) }
            }
        }

        // MARK: Lifecycle

        /// Sleeps in short slices so that `stop()` and resets cut delays short.
        private func pause(_ duration: Duration) {
            let deadline = ContinuousClock.now + duration
            while !isEnding {
                let left = deadline - .now
                guard left > .zero else { return }
                usleep(UInt32(ProxySocket.microseconds(min(left, .milliseconds(10)))))
            }
        }

        /// Wakes both pumps; used by `stop()`.
        func shutDownAll() {
            lock.withLock {
                ending = true
                guard !closed else { return }
                shutdown(client, Int32(SHUT_RDWR))
                if upstream >= 0 { shutdown(upstream, Int32(SHUT_RDWR)) }
            }
        }

        /// The last pump to finish closes both sockets.
        private func finish() {
            let last = lock.withLock { () -> Bool in
                pumps -= 1
                guard pumps == 0 else { return false }
                closeSockets()
                return true
            }
            if last { core.forget(self) }
        }

        /// For a connection whose pump thread could not start.
        func closeUnstarted() {
            lock.withLock { closeSockets() }
        }

        private func closeSockets() {
            guard !closed else { return }
            closed = true
            close(client)
            if upstream >= 0 { close(upstream) }
        }
    }

    // MARK: - Request framing

    /// Splits the client's byte stream into requests: finds each head, then skips over the
    /// body that Content-Length or chunked encoding describes. Bookkeeping only, no I/O.
    /// Anything it cannot frame (a huge or garbled head, a bad chunk size) turns the rest of the
    /// connection into unframed bytes, forwarded as they are.
    fileprivate struct RequestFramer {
        struct Head {
            let bytes: [UInt8]
            let method: String
            /// The request target: path and query.
            let target: String
            let chunked: Bool
            let contentLength: Int
            let expectsContinue: Bool
        }

        enum Event {
            case head(Head)
            case body([UInt8])
            /// The current request is complete.
            case end
            case unframed([UInt8])
        }

        private enum State {
            case head
            case body(remaining: Int)
            case chunkSize
            case chunkData(remaining: Int)
            case chunkEnd
            case trailer
            case unframed
        }

        private static let lineEnd: [UInt8] = [13, 10]
        private static let headEnd: [UInt8] = [13, 10, 13, 10]
        private static let maxHead = 64 * 1024

        private var state = State.head
        private var buffer: [UInt8] = []

        mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Event] {
            buffer.append(contentsOf: bytes)
            var events: [Event] = []
            while true {
                switch state {
                case .unframed:
                    if !buffer.isEmpty { events.append(.unframed(take(buffer.count))) }
                    return events
                case .head:
                    guard let range = buffer.firstRange(of: Self.headEnd) else {
                        if buffer.count > Self.maxHead { state = .unframed; continue }
                        return events
                    }
                    let bytes = take(range.upperBound)
                    guard let head = Self.parse(bytes) else {
                        state = .unframed
                        events.append(.unframed(bytes))
                        continue
                    }
                    events.append(.head(head))
                    if head.chunked {
                        state = .chunkSize
                    } else if head.contentLength > 0 {
                        state = .body(remaining: head.contentLength)
                    } else {
                        events.append(.end)
                    }
                case .body(let remaining), .chunkData(let remaining):
                    guard !buffer.isEmpty else { return events }
                    let count = min(remaining, buffer.count)
                    events.append(.body(take(count)))
                    let chunked = if case .chunkData = state { true } else { false }
                    if count < remaining {
                        state = chunked ? .chunkData(remaining: remaining - count) : .body(remaining: remaining - count)
                    } else if chunked {
                        state = .chunkEnd
                    } else {
                        state = .head
                        events.append(.end)
                    }
                case .chunkEnd:
                    guard buffer.count >= 2 else { return events }
                    events.append(.body(take(2)))
                    state = .chunkSize
                case .chunkSize, .trailer:
                    guard let range = buffer.firstRange(of: Self.lineEnd) else {
                        if buffer.count > Self.maxHead { state = .unframed; continue }
                        return events
                    }
                    let line = take(range.upperBound)
                    events.append(.body(line))
                    if case .trailer = state {
                        // Trailer fields end with an empty line.
                        if line.count == 2 {
                            state = .head
                            events.append(.end)
                        }
                        continue
                    }
                    let digits = String(decoding: line.dropLast(2).prefix { $0 != UInt8(ascii: ";") }, as: UTF8.self)
                    guard let size = Int(digits.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                        state = .unframed
                        continue
                    }
                    state = size == 0 ? .trailer : .chunkData(remaining: size)
                }
            }
        }

        private mutating func take(_ count: Int) -> [UInt8] {
            let bytes = Array(buffer[..<count])
            buffer.removeFirst(count)
            return bytes
        }

        private static func parse(_ bytes: [UInt8]) -> Head? {
            let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
            let requestLine = lines[0].split(separator: " ")
            guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else { return nil }
            var chunked = false, contentLength = 0, expectsContinue = false
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces).lowercased()
                switch name {
                case "transfer-encoding": chunked = value.contains("chunked")
                case "content-length":
                    guard let length = Int(value), length >= 0 else { return nil }
                    contentLength = length
                case "expect": expectsContinue = value == "100-continue"
                default: break
                }
            }
            return Head(bytes: bytes, method: String(requestLine[0]), target: String(requestLine[1]), chunked: chunked,
                        contentLength: contentLength, expectsContinue: expectsContinue)
        }
    }

    // MARK: - Socket helpers

    fileprivate enum ProxySocket {
        /// Binds 127.0.0.1 port 0 and lets the kernel pick the port.
        static func listen() throws -> (Int32, Int) {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw failure("socket") }
            var address = loopback(port: 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, Glibc.listen(descriptor, 128) == 0 else {
                let error = failure("bind/listen")
                close(descriptor)
                throw error
            }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
        }

        /// A blocking connect to 127.0.0.1 with a 5 s limit (SO_SNDTIMEO bounds connect(2) on
        /// Linux), so a wedged server cannot hang a pump.
        static func connect(port: Int) -> Int32? {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { return nil }
            var limit = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            var address = loopback(port: port)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(descriptor)
                return nil
            }
            // Sends may block as long as they like; stop() interrupts them with shutdown(2).
            limit = timeval(tv_sec: 0, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setNoDelay(descriptor)
            return descriptor
        }

        private static func loopback(port: Int) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            return address
        }

        private static func failure(_ call: String) -> FaultProxy.SocketError {
            FaultProxy.SocketError(description: "\(call): \(String(cString: strerror(errno)))")
        }

        /// Small writes (heads, delayed chunks) go out at once instead of waiting for Nagle.
        static func setNoDelay(_ descriptor: Int32) {
            var on: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        }

        /// Makes close(2) send a reset instead of a FIN.
        static func setLingerZero(_ descriptor: Int32) {
            var option = linger(l_onoff: 1, l_linger: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        }

        static func closeWithReset(_ descriptor: Int32) {
            setLingerZero(descriptor)
            close(descriptor)
        }

        /// recv(2), retried on EINTR: > 0 bytes, 0 at end of stream (or after shutdown), < 0 on error.
        static func receive(_ descriptor: Int32, into buffer: inout [UInt8]) -> Int {
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                return count
            }
        }

        /// Sends everything; false if the peer went away or the socket was shut down.
        static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let count = bytes.withUnsafeBytes {
                    send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                }
                if count > 0 {
                    sent += count
                } else if !(count < 0 && errno == EINTR) {
                    return false
                }
            }
            return true
        }

        /// Reads and drops input until end of stream, `limit`, or `abandon()` says so.
        static func drain(_ descriptor: Int32, for limit: Duration, abandon: () -> Bool) {
            let deadline = ContinuousClock.now + limit
            var scratch = [UInt8](repeating: 0, count: 16 * 1024)
            while ContinuousClock.now < deadline && !abandon() {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 50)
                if ready == 0 || (ready < 0 && errno == EINTR) { continue }
                guard ready > 0, receive(descriptor, into: &scratch) > 0 else { return }
            }
        }

        /// Whole microseconds (rounded down): `Duration` has no such accessor.
        static func microseconds(_ duration: Duration) -> Int64 {
            duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        }

        static func reason(for status: Int) -> String {
            switch status {
            case 200: "OK"
            case 400: "Bad Request"
            case 401: "Unauthorized"
            case 403: "Forbidden"
            case 404: "Not Found"
            case 408: "Request Timeout"
            case 429: "Too Many Requests"
            case 500: "Internal Server Error"
            case 502: "Bad Gateway"
            case 503: "Service Unavailable"
            case 504: "Gateway Timeout"
            default: "Injected Fault"
            }
        }
    }
}
