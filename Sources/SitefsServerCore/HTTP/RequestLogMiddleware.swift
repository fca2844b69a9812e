import Hummingbird
import Logging
import Synchronization

/// One line per request once its body has gone out: method, path with query, status,
/// bytes sent and milliseconds. Only the URI is logged: tokens travel in headers and
/// passwords in bodies, neither of which is printed.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let line = "\(request.method) \(request.uri)"
        var response = try await next(request, context)
        let status = response.status.code
        let body = response.body
        let logger = self.logger
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            let tally = ByteTally()
            do {
                try await body.write(CountingWriter(base: writer, tally: tally))
                logger.info("\(line) \(status) \(tally.bytes.load(ordering: .relaxed)) \(Self.milliseconds(since: start))ms")
            } catch {
                logger.info("\(line) \(status) \(tally.bytes.load(ordering: .relaxed)) \(Self.milliseconds(since: start))ms aborted")
                throw error
            }
        }
        return response
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> String {
        let elapsed = ContinuousClock.now - start
        let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        return String(Int(ms.rounded()))
    }
}

private final class ByteTally: Sendable {
    let bytes = Atomic<Int>(0)
}

private struct CountingWriter: ResponseBodyWriter {
    var base: any ResponseBodyWriter
    let tally: ByteTally

    mutating func write(_ buffer: ByteBuffer) async throws {
        tally.bytes.add(buffer.readableBytes, ordering: .relaxed)
        try await base.write(buffer)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await base.finish(trailingHeaders)
    }
}
