import Testing
import SitefsCrypto

@Suite struct ConstantTimeTests {
    @Test func comparesContentAndLength() {
        let a = hex("00112233445566778899aabbccddeeff")
        #expect(ConstantTime.equals(a, a))
        #expect(ConstantTime.equals([], []))
        #expect(!ConstantTime.equals(a, Array(a.dropLast())))
        #expect(!ConstantTime.equals([], [0]))
        for index in a.indices {
            for bit in 0..<8 {
                var b = a
                b[index] ^= 1 << bit
                #expect(!ConstantTime.equals(a, b))
            }
        }
    }
}
