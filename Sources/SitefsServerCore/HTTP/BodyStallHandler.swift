import Hummingbird
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request body stops arriving: from a request's head to its end,
/// each part must follow the one before within `timeout`. Otherwise a half-sent body holds a
/// connection (and its descriptor) forever. Idle connections and request heads
/// still arriving are Hummingbird's idle timeout's business: no request is under way then.
///
/// Lives on the connection's event loop, like every channel handler: no locks.
final class BodyStallHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head, .body: restartDeadline(context)
        case .end: cancelDeadline()
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadline()
        context.fireChannelInactive()
    }

    private func restartDeadline(_ context: ChannelHandlerContext) {
        cancelDeadline()
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            loopBound.value.close(promise: nil)
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
