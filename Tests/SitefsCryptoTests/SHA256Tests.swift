import Testing
import SitefsCrypto

/// FIPS 180-4 / NIST CSRC example vectors, plus consistency between the one-shot and
/// incremental paths, which share the buffering logic that is easiest to get wrong.
@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        // 896-bit message: its padding needs a second block.
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        ),
    ])
    func nistVectors(message: String, expected: String) {
        #expect(Hex.encode(SHA256.hash(bytes(message))) == expected)
        #expect(Hex.encode(SHA256.hash(message.utf8)) == expected)
    }

    @Test func oneMillionAInUnevenChunks() {
        let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        let chunkSizes = [1, 63, 64, 65, 127, 3, 1000, 4096, 7, 0, 129]
        let source = [UInt8](repeating: UInt8(ascii: "a"), count: 5000)
        var hasher = SHA256.Hasher()
        var remaining = 1_000_000
        var next = 0
        while remaining > 0 {
            let size = min(chunkSizes[next % chunkSizes.count], remaining)
            hasher.update(Array(source[0..<size]))
            remaining -= size
            next += 1
        }
        #expect(Hex.encode(hasher.finalize()) == expected)
        #expect(Hex.encode(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == expected)
    }

    /// Every message length 0…130 (covering the 55/56/64-byte padding edges and a
    /// second full block) split at every position must hash like the whole message.
    @Test func chunkedMatchesOneShotAcrossBlockBoundaries() {
        let message = (0..<130).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        var oneShot: [[UInt8]] = []
        for length in 0...130 {
            let prefix = Array(message.prefix(length))
            let whole = SHA256.hash(prefix)
            oneShot.append(whole)
            for split in 0...length {
                var hasher = SHA256.Hasher()
                hasher.update(Array(prefix[0..<split]))
                hasher.update(Array(prefix[split...]))
                #expect(hasher.finalize() == whole, "length \(length) split \(split)")
            }
            var byteByByte = SHA256.Hasher()
            for byte in prefix { byteByByte.update([byte]) }
            #expect(byteByByte.finalize() == whole, "length \(length) byte by byte")
        }
        // Distinct lengths give distinct digests (catches padding that ignores the length).
        #expect(Set(oneShot.map { Hex.encode($0) }).count == oneShot.count)
    }

    @Test func finalizeDoesNotConsumeHasher() {
        var hasher = SHA256.Hasher()
        hasher.update(bytes("ab"))
        #expect(hasher.finalize() == SHA256.hash(bytes("ab")))
        hasher.update(bytes("c"))
        #expect(Hex.encode(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// Sequences without contiguous storage go through the staging path (> 4096 bytes
    /// exercises its flush), and raw buffers through the pointer path.
    @Test func nonContiguousSequencesAndRawBuffers() {
        let count = 10_000
        let array = (0..<count).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let lazy = (0..<count).lazy.map { UInt8(truncatingIfNeeded: $0 % 251) }
        let expected = SHA256.hash(array)
        #expect(SHA256.hash(lazy) == expected)
        #expect(SHA256.hash(array[...]) == expected)
        #expect(array.withUnsafeBytes { SHA256.hash($0) } == expected)
        var hasher = SHA256.Hasher()
        hasher.update(lazy.prefix(5000))
        hasher.update(array[5000...])
        #expect(hasher.finalize() == expected)
    }
}
