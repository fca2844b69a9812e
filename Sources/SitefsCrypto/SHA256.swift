import Crypto

/// SHA-256 (FIPS 180-4), from swift-crypto: one-shot hashing and an incremental hasher for
/// large inputs. The project writes no cryptographic primitive itself; these names keep
/// the call sites independent of the library's types.
public enum SHA256: Sendable {
    /// Digest length in bytes.
    public static let digestByteCount = 32
    /// Message block length in bytes (also the HMAC block size).
    public static let blockByteCount = 64

    /// The SHA-256 digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        Array(Crypto.SHA256.hash(data: bytes))
    }

    /// The SHA-256 digest of any byte sequence (`Data`, `String.UTF8View`, slices, …).
    public static func hash(_ data: some Sequence<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(data)
        return hasher.finalize()
    }

    /// The SHA-256 digest of raw memory, for callers that already hold a buffer.
    public static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = Crypto.SHA256()
        hasher.update(bufferPointer: buffer)
        return Array(hasher.finalize())
    }

    /// Incremental SHA-256: feed data with `update` in pieces of any size, then `finalize`.
    /// Chunk boundaries do not affect the result. `finalize()` does not consume the hasher,
    /// so it also yields the digest of a prefix while hashing continues.
    public struct Hasher: Sendable {
        private var base = Crypto.SHA256()

        public init() {}

        public mutating func update(_ bytes: [UInt8]) {
            base.update(data: bytes)
        }

        /// Appends any byte sequence, through its contiguous storage when it has some and
        /// otherwise in bounded pieces.
        public mutating func update(_ data: some Sequence<UInt8>) {
            let handled: Void? = data.withContiguousStorageIfAvailable { base.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            if handled != nil { return }
            var staging = [UInt8]()
            staging.reserveCapacity(4096)
            for byte in data {
                staging.append(byte)
                if staging.count == 4096 {
                    base.update(data: staging)
                    staging.removeAll(keepingCapacity: true)
                }
            }
            if !staging.isEmpty { base.update(data: staging) }
        }

        public mutating func update(_ buffer: UnsafeRawBufferPointer) {
            base.update(bufferPointer: buffer)
        }

        public func finalize() -> [UInt8] {
            Array(base.finalize())
        }
    }
}
