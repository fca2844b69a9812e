import Synchronization

/// Bytes of one upload sent so far: written by the transfer, read by `sitefs status`.
public final class TransferProgress: Sendable {
    private let bytes = Atomic<Int64>(0)

    public init() {}

    /// The transfer has sent this many bytes of the body (it may go back on a resend).
    public func update(sent: Int64) { bytes.store(sent, ordering: .relaxed) }

    public var sent: Int64 { bytes.load(ordering: .relaxed) }
}
