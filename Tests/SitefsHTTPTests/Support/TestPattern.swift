/// Deterministic test bytes and the checksum both ends compute.
///
/// The pattern repeats every 65,521 bytes (a prime), so it never lines up with libcurl's
/// power-of-two buffer sizes: a chunk written at the wrong offset changes the checksum.
enum TestPattern {
    static let period = 65_521

    static let block: [UInt8] = (0..<period).map { index in
        UInt8(truncatingIfNeeded: (index &* 7_919) ^ (index >> 7))
    }

    /// `count` pattern bytes starting at stream position `offset`.
    static func bytes(at offset: Int, count: Int) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(count)
        var position = offset % period
        while output.count < count {
            let take = min(period - position, count - output.count)
            output.append(contentsOf: block[position..<(position + take)])
            position = 0
        }
        return output
    }

    /// FNV-1a 64 of the first `length` pattern bytes, computed in 1 MiB pieces.
    static func checksum(length: Int) -> UInt64 {
        var hash = FNV1a64()
        var offset = 0
        while offset < length {
            let piece = bytes(at: offset, count: min(1 << 20, length - offset))
            piece.withUnsafeBytes { hash.update($0) }
            offset += piece.count
        }
        return hash.value
    }
}

/// 64-bit FNV-1a: simple, streaming, and good enough to catch misplaced or lost bytes.
struct FNV1a64 {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var hash = value
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        value = hash
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
