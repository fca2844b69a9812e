/// Bytes a read lends to the FUSE adapter until it has replied with them: straight out of
/// a remote reader's chunks, so they are not copied again on their way to the kernel.
/// `end()` gives them back and must be called exactly once (noncopyable, so a lease cannot
/// be ended twice by accident).
///
/// The bytes are `pieces`, consecutive parts of the read in order: one, or one per chunk a
/// read spans, which the adapter sends as one reply (an iovec each). A read crossing a chunk
/// boundary is common: the kernel's read-ahead starts small (16, 32, 64 KiB), so its 128 KiB
/// requests are not aligned with the reader's chunks, and one in four spans two.
public struct ReadLease: ~Copyable {
    /// The read's bytes, in order; none empty.
    public let pieces: [UnsafeRawBufferPointer]
    private let onEnd: () -> Void

    public init(bytes: UnsafeRawBufferPointer, onEnd: @escaping () -> Void) {
        self.init(pieces: bytes.isEmpty ? [] : [bytes], onEnd: onEnd)
    }

    /// Every read makes one: the pieces are copied into a new array only when one is empty.
    public init(pieces: [UnsafeRawBufferPointer], onEnd: @escaping () -> Void) {
        self.pieces = pieces.contains(where: \.isEmpty) ? pieces.filter { !$0.isEmpty } : pieces
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

    /// How many bytes the pieces hold.
    public var count: Int { pieces.reduce(0) { $0 + $1.count } }

    /// The bytes as one collection, for reading them in order (tests); `copy(into:)` copies
    /// them out.
    public var bytes: FlattenSequence<[UnsafeRawBufferPointer]> { pieces.joined() }

    /// Copies the bytes to the start of `buffer`, as many as fit; returns how many.
    public func copy(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var copied = 0
        for piece in pieces where copied < buffer.count {
            let count = min(piece.count, buffer.count - copied)
            UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + count)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: piece[0..<count]))
            copied += count
        }
        return copied
    }

    public consuming func end() {
        onEnd()
    }
}
