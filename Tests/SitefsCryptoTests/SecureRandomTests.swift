import Testing
import SitefsCrypto

@Suite struct SecureRandomTests {
    @Test(arguments: [0, 1, 16, 32, 255, 256, 257, 100_000])
    func returnsRequestedCount(count: Int) {
        #expect(SecureRandom.bytes(count: count).count == count)
    }

    @Test func drawsDiffer() {
        let a = SecureRandom.bytes(count: 32)
        let b = SecureRandom.bytes(count: 32)
        #expect(a != b)
        #expect(a != [UInt8](repeating: 0, count: 32))
    }

    /// A coarse sanity check that the output is not stuck or heavily biased: over
    /// 64 KiB every byte value appears, and the bit balance is within ~10 sigma of 1/2.
    @Test func outputLooksUniform() {
        let sample = SecureRandom.bytes(count: 65_536)
        #expect(Set(sample).count == 256)
        let ones = sample.reduce(0) { $0 + $1.nonzeroBitCount }
        let bits = sample.count * 8
        #expect(abs(ones - bits / 2) < 3_600)
    }
}
