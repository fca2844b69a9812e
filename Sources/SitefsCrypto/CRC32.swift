/// CRC-32 as ZIP and PNG need it (IEEE 802.3, reflected polynomial 0xEDB88320): a
/// checksum, not cryptography (the demo's ZIP writer, the freedesktop thumbnails' PNG
/// chunks). A 256-entry table keeps it byte-at-a-time fast enough for a few hundred KiB.
public enum CRC32 {
    /// One entry per byte value: the CRC register after shifting that byte through.
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 {
            value = (value & 1) != 0 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1
        }
        return value
    }

    /// The CRC-32 of `bytes`; 0 for an empty sequence, 0xCBF43926 for "123456789".
    public static func checksum<Bytes: Sequence>(_ bytes: Bytes) -> UInt32
    where Bytes.Element == UInt8 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return crc ^ 0xFFFF_FFFF
    }
}
