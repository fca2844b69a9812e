import Hummingbird
import SitefsAPI

/// A change-feed long-poll's answer: 200 at once, then a few spaces every
/// `heartbeatInterval` while the server waits for a change, then the page (JSON allows
/// whitespace before a value, so the body still parses as one).
///
/// Why the heartbeats: a held request otherwise sends nothing for up to 30 s, so a client
/// cannot tell a quiet server from a dead connection (a crashed host, a network that went
/// silent) until its wait is over, and a load balancer or NAT drops a connection idle that
/// long. With them, the client keeps its ordinary low-speed limit (1 byte/s over its I/O
/// timeout) for held requests too, and notices a silent connection as fast as any other.
enum HeldChangeAnswer {
    static let heartbeatInterval: Duration = .seconds(2)
    /// Enough bytes per beat that the rate stays above 1 byte/s over any few seconds.
    static let heartbeat = ByteBuffer(string: String(repeating: " ", count: 16))

    private enum Event: Sendable {
        case beat
        case page(ChangePage)
    }

    /// `wait` looks again until there is a change or the wait is over. Should it fail meanwhile
    /// (the database went away), the answer is `empty`: "nothing yet", and the client's next
    /// poll gets the error with its proper status.
    static func response(empty: ChangePage, wait: @escaping @Sendable () async throws -> ChangePage) -> Response {
        let body = ResponseBody { writer in
            let (events, continuation) = AsyncStream.makeStream(of: Event.self)
            let looking = Task {
                let page = (try? await wait()) ?? empty
                continuation.yield(.page(page))
                continuation.finish()
            }
            let beating = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: heartbeatInterval)
                    continuation.yield(.beat)
                }
            }
            // A client that goes away fails the write: the wait is cancelled with it.
            defer {
                looking.cancel()
                beating.cancel()
            }
            for await event in events {
                switch event {
                case .beat:
                    try await writer.write(heartbeat)
                case .page(let page):
                    try await writer.write(JSONBody.encode(page))
                    try await writer.finish(nil)
                    return
                }
            }
        }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: body)
    }
}
