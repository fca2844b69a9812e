// SHA-256 (FIPS 180-4): one-shot hashing and an incremental hasher for large inputs.
// Implemented here rather than imported so the crypto target has no dependencies.

/// SHA-256 as specified in FIPS 180-4.
///
/// Use `hash(_:)` for data already in memory and `Hasher` to hash a stream
/// (for example a file read in chunks) without holding it all at once.
public enum SHA256: Sendable {
    /// Digest length in bytes.
    public static let digestByteCount = 32
    /// Message block length in bytes (also the HMAC block size).
    public static let blockByteCount = 64

    /// The SHA-256 digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The SHA-256 digest of any byte sequence (`Data`, `String.UTF8View`, slices, …).
    public static func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(data)
        return hasher.finalize()
    }

    /// The SHA-256 digest of raw memory, for callers that already hold a buffer.
    public static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(buffer)
        return hasher.finalize()
    }

    /// Incremental SHA-256: feed data with `update` in pieces of any size, then `finalize`.
    ///
    /// Chunk boundaries do not affect the result. `finalize()` does not consume the hasher,
    /// so it also yields the digest of a prefix while hashing continues.
    public struct Hasher: Sendable {
        private var state: State
        /// Holds the tail of the input that does not yet fill a 64-byte block. Always
        /// exactly 64 bytes long; only `bufferedCount` of them are meaningful.
        private var buffer: [UInt8]
        private var bufferedCount: Int
        /// Total bytes hashed so far, for the length field in the final padding. FIPS 180-4
        /// limits messages to under 2^64 bits, so a byte count in UInt64 is ample.
        private var totalByteCount: UInt64

        /// A hasher for a fresh message.
        public init() {
            self.init(resuming: .initial, afterByteCount: 0)
        }

        /// A hasher that continues from `state`, as if `byteCount` bytes (a whole number of
        /// blocks) had already been hashed. HMAC uses this to start from its precomputed
        /// key-pad states instead of rehashing the padded key for every message.
        init(resuming state: State, afterByteCount byteCount: UInt64) {
            precondition(byteCount % UInt64(SHA256.blockByteCount) == 0, "resume only at a block boundary")
            self.state = state
            self.buffer = [UInt8](repeating: 0, count: SHA256.blockByteCount)
            self.bufferedCount = 0
            self.totalByteCount = byteCount
        }

        /// Appends `bytes` to the message.
        public mutating func update(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { update($0) }
        }

        /// Appends any byte sequence to the message, using its contiguous storage when it has
        /// some and otherwise copying it through a bounded staging buffer.
        public mutating func update(_ data: some Sequence<UInt8>) {
            let handled: Void? = data.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
            if handled != nil { return }
            var staging = [UInt8]()
            staging.reserveCapacity(4096)
            for byte in data {
                staging.append(byte)
                if staging.count == 4096 {
                    update(staging)
                    staging.removeAll(keepingCapacity: true)
                }
            }
            update(staging)
        }

        /// Appends raw memory to the message. Whole blocks are compressed straight from
        /// `input`; only a partial block at either end is copied into the internal buffer.
        public mutating func update(_ input: UnsafeRawBufferPointer) {
            guard var remaining = input.baseAddress, input.count > 0 else { return }
            var remainingCount = input.count
            totalByteCount &+= UInt64(remainingCount)
            let blockSize = SHA256.blockByteCount

            if bufferedCount > 0 {
                let take = min(blockSize - bufferedCount, remainingCount)
                let offset = bufferedCount
                buffer.withUnsafeMutableBytes { buf in
                    (buf.baseAddress! + offset).copyMemory(from: remaining, byteCount: take)
                }
                bufferedCount += take
                remaining += take
                remainingCount -= take
                guard bufferedCount == blockSize else { return }
                compressBuffer()
            }

            let wholeBlocks = remainingCount / blockSize
            if wholeBlocks > 0 {
                SHA256.compress(&state, blocks: remaining, blockCount: wholeBlocks)
                remaining += wholeBlocks * blockSize
                remainingCount -= wholeBlocks * blockSize
            }

            if remainingCount > 0 {
                let tail = remaining
                let tailCount = remainingCount
                buffer.withUnsafeMutableBytes { buf in
                    buf.baseAddress!.copyMemory(from: tail, byteCount: tailCount)
                }
                bufferedCount = tailCount
            }
        }

        /// The digest of everything passed to `update` so far.
        public func finalize() -> [UInt8] {
            finalState().bytes
        }

        /// Applies the final padding (FIPS 180-4 §5.1.1) to a copy of the state: a 1 bit,
        /// zeros up to 56 bytes mod 64, then the message length in bits, big-endian.
        func finalState() -> State {
            var state = self.state
            let bitLength = totalByteCount &* 8
            let count = bufferedCount
            // Padding needs a second block when fewer than 9 bytes (0x80 + length) remain.
            let paddedCount = count < 56 ? 64 : 128
            buffer.withUnsafeBytes { buffered in
                withUnsafeTemporaryAllocation(byteCount: paddedCount, alignment: 8) { padded in
                    padded.initializeMemory(as: UInt8.self, repeating: 0)
                    padded.baseAddress!.copyMemory(from: buffered.baseAddress!, byteCount: count)
                    padded[count] = 0x80
                    padded.storeBytes(of: bitLength.bigEndian, toByteOffset: paddedCount - 8, as: UInt64.self)
                    SHA256.compress(&state, blocks: UnsafeRawPointer(padded.baseAddress!), blockCount: paddedCount / 64)
                }
            }
            return state
        }

        private mutating func compressBuffer() {
            // Copy the state out so the buffer access and the state mutation do not overlap.
            var state = self.state
            buffer.withUnsafeBytes { SHA256.compress(&state, blocks: $0.baseAddress!, blockCount: 1) }
            self.state = state
            bufferedCount = 0
        }
    }
}
