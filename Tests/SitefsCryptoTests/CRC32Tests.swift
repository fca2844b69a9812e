import SitefsCrypto
import Testing

@Suite("CRC-32")
struct CRC32Tests {
    @Test("standard check value for \"123456789\"")
    func checkValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test("empty input gives 0")
    func empty() {
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    @Test("known value for a pangram and a single byte")
    func knownValues() {
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
        #expect(CRC32.checksum([0x00]) == 0xD202_EF8D)
    }
}
