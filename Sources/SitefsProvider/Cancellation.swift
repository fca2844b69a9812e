/// Whether whoever waits on a call has given up on it.
///
/// A program blocked in `open()` while its file downloads can be interrupted: the kernel
/// then sends FUSE_INTERRUPT for the request, and the adapter's check turns true. Long
/// waits (a download, waiting for another opener's download) ask now and then and end
/// with `ProviderError.cancelled` (EINTR), so a signal ends the wait within about a second
/// instead of when the server finishes, however slow or hostile it is.
public struct Cancellation: Sendable {
    private let check: @Sendable () -> Bool
    /// False only for `never`: a transfer need not install a check that cannot fire.
    public let mayCancel: Bool

    /// `check` is asked on the thread that runs the call, for as long as the call runs.
    public init(_ check: @escaping @Sendable () -> Bool) {
        self.check = check
        mayCancel = true
    }

    private init() {
        check = { false }
        mayCancel = false
    }

    /// Nobody will give up: background work (uploads, the change feed, read-ahead) and tests.
    public static let never = Cancellation()

    public var isCancelled: Bool { check() }
}
