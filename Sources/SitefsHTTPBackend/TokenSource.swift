/// Where the bearer token comes from. The mount reads it from the credentials file on
/// each use (cheaply, when the file changed), so `sitefs login` while mounted takes effect
/// without a remount.
public protocol TokenSource: Sendable {
    func token() -> String?
}

/// A fixed token (tests, one-shot commands).
public struct FixedToken: TokenSource {
    let value: String?
    public init(_ value: String?) { self.value = value }
    public func token() -> String? { value }
}
