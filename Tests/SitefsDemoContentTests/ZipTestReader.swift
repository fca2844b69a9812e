/// A deliberately independent, minimal ZIP reader for the tests: it walks the archive
/// the way an unzip tool does (end record → central directory → local headers) and
/// throws on any inconsistency, so a writer bug cannot hide behind its own reader.
struct ZipTestReader {
    struct Entry {
        let name: String
        let flags: UInt16
        let method: UInt16
        let time: UInt16
        let date: UInt16
        let crc: UInt32
        let localHeaderOffset: Int
        let localExtraLength: Int
        /// Where the file data starts, counted from the start of the archive.
        let dataOffset: Int
        let data: [UInt8]
    }

    struct Malformed: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    let entries: [Entry]

    init(_ bytes: [UInt8]) throws {
        func u16(_ at: Int) throws -> UInt16 {
            guard at >= 0, at + 2 <= bytes.count else { throw Malformed("read past end at \(at)") }
            return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
        }
        func u32(_ at: Int) throws -> UInt32 {
            UInt32(try u16(at)) | UInt32(try u16(at + 2)) << 16
        }
        func slice(_ at: Int, _ count: Int) throws -> [UInt8] {
            guard at >= 0, count >= 0, at + count <= bytes.count else { throw Malformed("slice past end") }
            return Array(bytes[at..<at + count])
        }

        // The end record is the last 22 bytes plus a comment; search backwards for it.
        guard bytes.count >= 22 else { throw Malformed("shorter than an end record") }
        var end = bytes.count - 22
        while try u32(end) != 0x0605_4B50 {
            end -= 1
            guard end >= 0 else { throw Malformed("no end of central directory record") }
        }
        guard try u16(end + 20) == bytes.count - end - 22 else { throw Malformed("comment length mismatch") }
        guard try u16(end + 4) == 0, try u16(end + 6) == 0 else { throw Malformed("multi-disk archive") }
        let count = Int(try u16(end + 10))
        guard try u16(end + 8) == count else { throw Malformed("entry counts differ") }
        let directorySize = Int(try u32(end + 12))
        let directoryOffset = Int(try u32(end + 16))
        guard directoryOffset + directorySize == end else { throw Malformed("directory does not end at end record") }

        var entries: [Entry] = []
        var position = directoryOffset
        var expectedLocalOffset = 0
        for _ in 0..<count {
            guard try u32(position) == 0x0201_4B50 else { throw Malformed("bad central header signature") }
            let flags = try u16(position + 8)
            let method = try u16(position + 10)
            let time = try u16(position + 12)
            let date = try u16(position + 14)
            let crc = try u32(position + 16)
            let compressedSize = Int(try u32(position + 20))
            let size = Int(try u32(position + 24))
            let nameLength = Int(try u16(position + 28))
            let extraLength = Int(try u16(position + 30))
            let commentLength = Int(try u16(position + 32))
            let localOffset = Int(try u32(position + 42))
            let nameBytes = try slice(position + 46, nameLength)
            position += 46 + nameLength + extraLength + commentLength

            guard method == 0, compressedSize == size else { throw Malformed("not a stored entry") }
            // Entries written back to back: each local header follows the previous data.
            guard localOffset == expectedLocalOffset else { throw Malformed("unexpected local offset \(localOffset)") }
            guard try u32(localOffset) == 0x0403_4B50 else { throw Malformed("bad local header signature") }
            guard try u16(localOffset + 6) == flags, try u16(localOffset + 8) == method,
                  try u16(localOffset + 10) == time, try u16(localOffset + 12) == date,
                  try u32(localOffset + 14) == crc, Int(try u32(localOffset + 18)) == compressedSize,
                  Int(try u32(localOffset + 22)) == size
            else { throw Malformed("local header disagrees with central directory") }
            guard Int(try u16(localOffset + 26)) == nameLength,
                  try slice(localOffset + 30, nameLength) == nameBytes
            else { throw Malformed("local name disagrees with central directory") }
            let localExtraLength = Int(try u16(localOffset + 28))
            let dataOffset = localOffset + 30 + nameLength + localExtraLength
            let data = try slice(dataOffset, size)
            guard Self.bitwiseCRC32(data) == crc else { throw Malformed("CRC mismatch") }
            guard let name = String(validating: nameBytes, as: UTF8.self) else { throw Malformed("name not UTF-8") }
            expectedLocalOffset = dataOffset + size
            entries.append(Entry(name: name, flags: flags, method: method, time: time, date: date, crc: crc,
                                 localHeaderOffset: localOffset, localExtraLength: localExtraLength,
                                 dataOffset: dataOffset, data: data))
        }
        guard position == end else { throw Malformed("central directory size mismatch") }
        guard expectedLocalOffset == directoryOffset else { throw Malformed("gap before central directory") }
        self.entries = entries
    }

    /// CRC-32 bit by bit, without the writer's table, so a wrong table cannot go unnoticed.
    static func bitwiseCRC32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func data(named name: String) throws -> [UInt8] {
        guard let entry = entries.first(where: { $0.name == name }) else { throw Malformed("no entry \(name)") }
        return entry.data
    }
}
