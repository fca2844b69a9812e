/// Bytes a read lends to the FUSE adapter until it has replied with them: straight out of
/// a remote reader's window, so they are not copied again on their way to the kernel.
/// `end()` gives them back and must be called exactly once (noncopyable, so a lease cannot
/// be ended twice by accident).
public struct ReadLease: ~Copyable {
    public let bytes: UnsafeRawBufferPointer
    private let onEnd: () -> Void

    public init(bytes: UnsafeRawBufferPointer, onEnd: @escaping () -> Void) {
        self.bytes = bytes
        self.onEnd = onEnd
    }

    /// Bytes in memory of their own, at most `capacity` of them, filled by `fill` (which
    /// returns how many it wrote) and freed at `end()`.
    public init<E: Error>(capacity: Int, fill: (UnsafeMutableRawBufferPointer) throws(E) -> Int) throws(E) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(capacity, 1), alignment: 16)
        let count: Int
        do {
            count = try fill(buffer)
        } catch {
            buffer.deallocate()
            throw error
        }
        self.init(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<min(max(count, 0), capacity)])) { buffer.deallocate() }
    }

    public consuming func end() {
        onEnd()
    }
}
