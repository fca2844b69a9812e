import Hummingbird

/// Per-request state: Hummingbird's core context plus who is calling, once signed in.
public struct ServerRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `AuthenticationMiddleware` on every route but sign-in.
    public var caller: Caller?
    /// The client's IP address, when known (sign-in throttling counts failures per address).
    public let clientAddress: String?

    public init(source: Source) {
        coreContext = .init(source: source)
        caller = nil
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The signed-in caller; routes behind the authentication middleware always have one.
    func requireCaller() throws -> Caller {
        guard let caller else { throw APIError.unauthorized("sign in first: POST /v1/session") }
        return caller
    }
}
